package assistant_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/assistant"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
)

// runIn runs one turn of the visitor's question in lang.
func (f *fixture) runIn(t *testing.T, lang string) *recorder {
	t.Helper()
	rec := &recorder{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	msgs := []assistant.Message{{Role: "user", Content: "Was kostet ein Barrierefreiheits-Audit?"}}
	if err := f.asst.Run(ctx, assistant.Turn{Messages: msgs, Client: "192.0.2.1", Lang: lang}, rec.emit); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rec
}

// TestRetrievalInVisitorsLanguage: a retrieval-only answer opens in the turn's language,
// German for any German tag, English for a language the server has no words in.
func TestRetrievalInVisitorsLanguage(t *testing.T) {
	f := newFixture(t, assistant.Options{}, false)
	for _, tc := range []struct{ lang, want string }{
		{"de", "Dies ist ein Suchergebnis, keine formulierte Antwort: die Seiten dieser Website, die am besten zu Ihrer Frage passen.\n\n1. ["},
		{"de-AT", "Dies ist ein Suchergebnis, keine formulierte Antwort"},
		{"en", "This is a search result, not a written answer: the pages of this site that best match your question.\n\n1. ["},
		{"fr", "This is a search result, not a written answer"},
		{"", "This is a search result, not a written answer"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			rec := f.runIn(t, tc.lang)
			if text := rec.text(); !strings.HasPrefix(text, tc.want) {
				t.Errorf("answer in %q begins %q, want %q", tc.lang, text[:min(len(text), 80)], tc.want)
			}
			if done := rec.last().Data.(assistant.Done); done.Mode != "retrieval" {
				t.Errorf("done %+v", done)
			}
		})
	}
}

// TestServerWordsInVisitorsLanguage: the notes and error events the server writes in a
// turn with a model are in the turn's language too.
func TestServerWordsInVisitorsLanguage(t *testing.T) {
	t.Run("provider down: the retrieval frame", func(t *testing.T) {
		f := newFixture(t, assistant.Options{ProviderTimeout: 300 * time.Millisecond}, true)
		f.fake.Script(llmtest.ChatReply{Status: 503})
		rec := f.runIn(t, "de")
		if text := rec.text(); !strings.HasPrefix(text, "Der Assistent ist gerade nicht verfügbar. Darum ist dies ein Suchergebnis") {
			t.Errorf("answer %q", text)
		}
	})
	t.Run("provider fails after text: the error event", func(t *testing.T) {
		f := newFixture(t, assistant.Options{}, true)
		f.fake.Script(llmtest.ChatReply{Text: []string{"Ein Audit "}, FailMidStream: true})
		rec := f.runIn(t, "de")
		last := rec.last()
		if e, ok := last.Data.(assistant.Error); !ok || e.Code != "unavailable" || !strings.HasPrefix(e.Message, "Der Assistent hat aufgehört zu antworten.") {
			t.Errorf("last event %+v", last)
		}
	})
	t.Run("loop bound: the note", func(t *testing.T) {
		f := newFixture(t, assistant.Options{MaxToolRounds: 2}, true)
		f.fake.SetFallback(func(n int, _ llmtest.ChatRequest) llmtest.ChatReply {
			return llmtest.CallTools(call("get_page", fmt.Sprintf(`{"url":"/page-%d/"}`, n)))
		})
		rec := f.runIn(t, "de")
		if text := rec.text(); !strings.Contains(text, "(Ich habe nach 2 Runden aufgehört, nachzuschlagen.") {
			t.Errorf("answer %q", text)
		}
	})
}
