package app

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/sitetools/sitetools/internal/config"

	"github.com/sitetools/sitetools/internal/assistant"
	"github.com/sitetools/sitetools/internal/llm"
)

// maxPersonaBytes bounds CHAT_PERSONA_FILE: it is sent with every chat request.
const maxPersonaBytes = 16 << 10

// newChat returns the chat's model (nil without LLM_BASE_URL: retrieval-only answers)
// and the persona from CHAT_PERSONA_FILE ("" for the built-in one).
func newChat(cfg config.Chat, logger *slog.Logger) (assistant.Provider, string, error) {
	var persona string
	if cfg.PersonaFile != "" {
		b, err := os.ReadFile(cfg.PersonaFile)
		switch {
		case err != nil:
			return nil, "", fmt.Errorf("configuration:\n  CHAT_PERSONA_FILE cannot be read: %w", err)
		case len(b) > maxPersonaBytes:
			return nil, "", fmt.Errorf("configuration:\n  CHAT_PERSONA_FILE is %d bytes; at most %d are allowed (it is sent with every chat message)", len(b), maxPersonaBytes)
		case !utf8.Valid(b) || strings.TrimSpace(string(b)) == "":
			return nil, "", errors.New("configuration:\n  CHAT_PERSONA_FILE must be non-empty UTF-8 text")
		}
		persona = string(b)
	}
	if cfg.LLMBaseURL == "" {
		return nil, persona, nil
	}
	chat, err := llm.NewChat(llm.ChatOptions{BaseURL: cfg.LLMBaseURL, BaseURLSetting: "LLM_BASE_URL", APIKey: cfg.LLMAPIKey, Model: cfg.LLMModel, Logger: logger})
	if err != nil {
		return nil, "", fmt.Errorf("chat: %w", err)
	}
	return chat, persona, nil
}
