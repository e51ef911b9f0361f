package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/sitetools/sitetools/internal/assistant"
	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/tools"
)

// heartbeatEvery is how often a comment line keeps a quiet stream open through proxies
// while the model thinks.
const heartbeatEvery = 15 * time.Second

// chatTurn handles POST /api/chat: one turn of the site chat, streamed as server-sent
// events. The request is {"conversationId": "…", "messages": [{"role", "content"}],
// "consent": true, "lang": "de"}: the whole transcript, from the visitor's browser;
// nothing is kept here. The texts the server writes itself are in the visitor's language
// (see chatLanguage), which the response's Content-Language names. Until the stream starts, failures are HTTP errors in the one error shape: a bad
// body (400 malformed_request), no consent (403 consent_required), a transcript over
// the caps (400 query_too_long, details pointing at /messages or /messages/N/content),
// 413, 415, 429, 503, and, last, the proof of work when one is required (403
// proof_of_work_required or proof_of_work_invalid, see checkProofOfWork). Then every
// event is "event: <name>\ndata: <json>\n\n" (see package
// assistant for the events), and a failure is an error event that ends the stream.
func (a *App) chatTurn(c echo.Context) error {
	req := c.Request()
	c.Set(ctxChannel, string(tools.ChannelChat))
	if !isJSON(req.Header.Get("Content-Type")) {
		return tools.Errorf(CodeUnsupportedMediaType, "send the request body as application/json")
	}
	body, err := readBody(req, a.chatBodyLimit())
	if err != nil {
		return err
	}
	msgs, lang, err := parseChatBody(body, a.cfg.Chat)
	if err != nil {
		return err
	}
	lang = chatLanguage(lang, req.Header.Get("Accept-Language"))
	client := c.RealIP()
	if ok, wait := a.limiter.Allow(client); !ok {
		return &tools.Error{Code: tools.CodeRateLimited, Message: "too many chat messages; retry after the time in Retry-After",
			RetryAfter: max(wait, time.Second)}
	}
	// Before the stream starts and before any provider call: a full replica says so.
	release, err := a.chatCap.Acquire(client)
	if err != nil {
		return err
	}
	defer release()
	// Last: every refusal above costs nothing and leaves the visitor's solution unspent.
	if err := a.checkProofOfWork(req.Context(), req.Header.Get(proofOfWorkHeader)); err != nil {
		return err
	}

	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	h.Set("Content-Language", lang)
	h.Add("Vary", "Accept-Language")
	c.Response().WriteHeader(http.StatusOK)
	stream := &sseStream{w: c.Response()}
	if err := stream.flush(); err != nil {
		return nil
	}
	stop := stream.heartbeat(heartbeatEvery)
	defer stop()

	// The turn's paid calls are charged to the client's daily share.
	ctx := a.edge.withClient(req.Context(), client)
	var cited []string
	err = a.chat.Run(ctx, assistant.Turn{Messages: msgs, Client: client, Lang: lang}, func(e assistant.Event) error {
		switch d := e.Data.(type) {
		case assistant.Sources:
			cited = citedPages(d)
		case assistant.Done:
			a.metrics.chatAnswers.WithLabelValues(d.Mode, d.Reason).Inc()
			a.insights.Answer(d.Kind, d.Reason, cited, d.ContactOffered)
			if id, err := a.answerIDs.Issue(ctx, d.Kind); err == nil {
				d.AnswerID = id // else the answer cannot be rated: the database is down
			}
			e.Data = d
		}
		return stream.send(e.Name, e.Data)
	})
	if err != nil && ctx.Err() == nil && !stream.broken() {
		a.metrics.chatAnswers.WithLabelValues("error", "internal").Inc()
		a.logger.Error("chat turn failed", "err", err.Error())
		_ = stream.send(assistant.EventError, assistant.Error{Code: tools.CodeInternal, Message: assistant.InternalError(lang)})
	}
	return nil
}

// citedPages are the pages of an answer's sources, each once (sources name sections).
func citedPages(s assistant.Sources) []string {
	var pages []string
	for _, src := range s.Items {
		if !slices.Contains(pages, src.URL) {
			pages = append(pages, src.URL)
		}
	}
	return pages
}

// chatBodyLimit leaves room for a transcript of CHAT_MAX_CHARS characters of any script
// (up to four bytes each), so that the caps, with their clearer message, apply first.
func (a *App) chatBodyLimit() int64 {
	return max(a.cfg.BodyLimitBytes, int64(4*a.cfg.Chat.MaxChars+16<<10))
}

type chatBody struct {
	ConversationID *string           `json:"conversationId"`
	Messages       []chatMessageBody `json:"messages"`
	Consent        *bool             `json:"consent"`
	Lang           *string           `json:"lang"`
}

type chatMessageBody struct {
	Role    *string `json:"role"`
	Content *string `json:"content"`
}

// parseChatBody checks the request strictly and returns the transcript.
// unexpectedField returns the first member name of the body, or of one of its
// messages, that is not exactly one of the allowed names.
func unexpectedField(body []byte) (string, bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return "", true // the decoder below says what is wrong
	}
	for k := range top {
		switch k {
		case "conversationId", "messages", "consent", "lang":
		default:
			return k, false
		}
	}
	var msgs []map[string]json.RawMessage
	if json.Unmarshal(top["messages"], &msgs) != nil {
		return "", true
	}
	for _, m := range msgs {
		for k := range m {
			if k != "role" && k != "content" {
				return k, false
			}
		}
	}
	return "", true
}

// chatBodyShape is what a chat request looks like, for error messages.
const chatBodyShape = `{"conversationId": "…", "messages": [{"role": "user", "content": "…"}], "consent": true, "lang": "en"}`

func malformedChat(format string, args ...any) error {
	return tools.Errorf(tools.CodeMalformedRequest, format, args...)
}

// parseChatBody reads a chat request in the order its checks are documented: the shape,
// the messages, the visitor's consent, then the cost guard's caps. It returns the
// messages for the model, without empty ones, and the language the request names ("" for
// none).
func parseChatBody(body []byte, caps config.Chat) ([]assistant.Message, string, error) {
	b, err := decodeChatBody(body)
	if err != nil {
		return nil, "", err
	}
	if err := checkChatMessages(b); err != nil {
		return nil, "", err
	}
	// Consent before anything else is looked at: without it nothing reaches a tool or model.
	if b.Consent == nil || !*b.Consent {
		return nil, "", tools.Errorf(CodeConsentRequired, `the chat needs the visitor's consent to its privacy notice: send "consent": true once they gave it`)
	}
	if err := checkChatCaps(b, caps); err != nil {
		return nil, "", err
	}
	msgs := make([]assistant.Message, 0, len(b.Messages))
	for _, m := range b.Messages {
		if strings.TrimSpace(*m.Content) == "" {
			continue // e.g. an answer that failed before any text
		}
		msgs = append(msgs, assistant.Message{Role: *m.Role, Content: *m.Content})
	}
	var lang string
	if b.Lang != nil {
		lang = *b.Lang
	}
	return msgs, lang, nil
}

// decodeChatBody decodes the body strictly: one JSON object, known fields only, spelled
// exactly.
func decodeChatBody(body []byte) (*chatBody, error) {
	trimmed := bytes.TrimSpace(body)
	if !json.Valid(trimmed) {
		return nil, malformedChat("request body is not valid JSON; send %s", chatBodyShape)
	}
	if trimmed[0] != '{' {
		return nil, malformedChat("request body must be a JSON object %s", chatBodyShape)
	}
	// Field names match exactly, as on every endpoint (encoding/json alone would
	// accept "MESSAGES").
	if field, ok := unexpectedField(trimmed); !ok {
		return nil, malformedChat("unknown field %q: only conversationId, messages, consent and lang are allowed, and role and content in a message", tools.Truncate(field, 64))
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	var b chatBody
	if err := dec.Decode(&b); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr):
			return nil, malformedChat("%q has the wrong type: want %s", tools.Truncate(typeErr.Field, 64), typeName(typeErr.Type.Kind().String()))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return nil, malformedChat("unknown field %s: only conversationId, messages, consent and lang are allowed, and role and content in a message",
				tools.Truncate(strings.TrimPrefix(err.Error(), "json: unknown field "), 64))
		}
		return nil, malformedChat("request body does not have the shape %s", chatBodyShape)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, malformedChat("request body has data after the JSON object")
	}
	return &b, nil
}

// checkChatMessages checks the conversation id and each message, and that the visitor
// speaks last.
func checkChatMessages(b *chatBody) error {
	if b.ConversationID != nil && utf8.RuneCountInString(*b.ConversationID) > 128 {
		return malformedChat(`"conversationId" must be at most 128 characters`)
	}
	if b.Messages == nil {
		return malformedChat(`"messages" is required: the conversation so far, ending with the visitor's message`)
	}
	for i, m := range b.Messages {
		if m.Role == nil || (*m.Role != assistant.RoleUser && *m.Role != assistant.RoleAssistant) {
			return malformedChat(`messages[%d]: "role" must be "user" or "assistant"`, i)
		}
		if m.Content == nil {
			return malformedChat(`messages[%d]: "content" is required`, i)
		}
		if strings.ContainsRune(*m.Content, 0) {
			return &tools.Error{Code: tools.CodeMalformedRequest,
				Message: fmt.Sprintf(`messages[%d]: "content" contains the character U+0000 (NUL), which is not allowed`, i),
				Details: []tools.Detail{{Pointer: fmt.Sprintf("/messages/%d/content", i), Message: "contains U+0000 (NUL)"}}}
		}
	}
	if n := len(b.Messages); n == 0 || *b.Messages[n-1].Role != assistant.RoleUser || strings.TrimSpace(*b.Messages[n-1].Content) == "" {
		return malformedChat(`the last of "messages" must be the visitor's (role "user"), and not empty`)
	}
	return nil
}

// checkChatCaps applies the cost guard's caps on the transcript, before any paid call.
func checkChatCaps(b *chatBody, caps config.Chat) error {
	var details []tools.Detail
	total := 0
	perMessage := caps.MaxMessageChars()
	for i, m := range b.Messages {
		n := utf8.RuneCountInString(*m.Content)
		total += n
		if n > perMessage {
			details = append(details, tools.Detail{Pointer: fmt.Sprintf("/messages/%d/content", i),
				Message: fmt.Sprintf("%d characters; at most %d are allowed", n, perMessage)})
		}
	}
	var problem string
	switch {
	case len(b.Messages) > caps.MaxMessages:
		problem = fmt.Sprintf("the conversation has %d messages; at most %d are allowed: drop the oldest or start a new conversation", len(b.Messages), caps.MaxMessages)
		details = append([]tools.Detail{{Pointer: "/messages", Message: fmt.Sprintf("at most %d items", caps.MaxMessages)}}, details...)
	case len(details) > 0:
		problem = fmt.Sprintf("a message is too long: at most %d characters are allowed in one message", perMessage)
	case total > caps.MaxChars:
		problem = fmt.Sprintf("the conversation has %d characters; at most %d are allowed: drop the oldest messages or start a new conversation", total, caps.MaxChars)
		details = []tools.Detail{{Pointer: "/messages", Message: fmt.Sprintf("at most %d characters in all", caps.MaxChars)}}
	}
	if problem != "" {
		return &tools.Error{Code: tools.CodeQueryTooLong, Message: problem, Details: details}
	}
	return nil
}

func typeName(kind string) string {
	switch kind {
	case "ptr", "pointer":
		return "another type"
	case "slice":
		return "an array"
	case "struct":
		return "an object"
	case "bool":
		return "a boolean"
	}
	return "a " + kind
}

// sseStream writes server-sent events, one at a time, each flushed at once.
type sseStream struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	failed bool
}

var errClientGone = errors.New("the client went away")

func (s *sseStream) send(name string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("server: event %s: %w", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed {
		return errClientGone
	}
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b); err != nil {
		s.failed = true
		return errClientGone
	}
	return s.flushLocked()
}

func (s *sseStream) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flushLocked()
}

func (s *sseStream) flushLocked() error {
	if err := http.NewResponseController(s.w).Flush(); err != nil {
		s.failed = true
		return errClientGone
	}
	return nil
}

func (s *sseStream) broken() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// heartbeat writes a comment line every interval until stop is called.
func (s *sseStream) heartbeat(every time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.mu.Lock()
				if !s.failed {
					if _, err := io.WriteString(s.w, ": keep-alive\n\n"); err != nil {
						s.failed = true
					} else {
						_ = s.flushLocked()
					}
				}
				s.mu.Unlock()
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}
