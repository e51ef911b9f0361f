package assistant

import (
	"fmt"
	"slices"
	"strings"
)

// DefaultLanguage is the language of the server's own words in a chat when the visitor's
// is not one of Languages.
const DefaultLanguage = "en"

// words are the texts the server itself writes into a chat, in one language: the frame
// of a retrieval-only answer, its notices, and the error events a visitor reads. The
// model's answers are the model's; the persona asks it to answer in the visitor's
// language.
type words struct {
	// retrievalIntro opens a retrieval-only answer, by the reason there is no written one.
	retrievalIntro map[string]string
	noSearch       string // no model and no search either
	nothingToFind  string // the message has no words to search for
	noMatch        string // the search found nothing
	noAnswer       string // the turn ended without any text
	rateLimited    string
	searchDown     string
	modelFailed    string
	stoppedRounds  string // %d: the rounds of tool calls
	stoppedAnswer  string // the provider failed after the answer began
	internal       string
}

// languages holds the server's words per language, by BCP 47 primary subtag. Another
// language is another entry, with every text (a test checks).
var languages = map[string]*words{
	"en": {
		retrievalIntro: map[string]string{
			ReasonNotConfigured:   "This is a search result, not a written answer: the pages of this site that best match your question.",
			ReasonBudgetExhausted: "The assistant has reached its limit for today, so this is a search result, not a written answer: the pages of this site that best match your question.",
			ReasonClientShare:     "You have asked the assistant a lot today, so for the rest of the day this is a search result, not a written answer: the pages of this site that best match your question.",
			ReasonPaced:           "The assistant is very busy at the moment, so this is a search result, not a written answer: the pages of this site that best match your question. Written answers return later today.",
			ReasonUnavailable:     "The assistant is not available right now, so this is a search result, not a written answer: the pages of this site that best match your question.",
		},
		noSearch:      "The assistant is not available right now, and this site has no search to offer instead. Please use the site's contact page.",
		nothingToFind: "This is a search result, not a written answer, and your message has nothing to search for. Try asking in words.",
		noMatch:       "This is a search result, not a written answer: no page of this site matches your question. Try other words, or use the site's contact page.",
		noAnswer:      "I could not find an answer to that. Try asking in other words, or use the site's contact page.",
		rateLimited:   "Too many requests; please wait a moment and try again.",
		searchDown:    "Search is not available right now. Please try again shortly.",
		modelFailed:   "The assistant could not look that up. Please try again or ask in other words.",
		stoppedRounds: "\n\n(I stopped looking things up after %d rounds. If this does not answer your question, please ask something narrower.)",
		stoppedAnswer: "The assistant stopped answering. Please try again shortly.",
		internal:      "Something went wrong on our side. Please try again shortly.",
	},
	"de": {
		retrievalIntro: map[string]string{
			ReasonNotConfigured:   "Dies ist ein Suchergebnis, keine formulierte Antwort: die Seiten dieser Website, die am besten zu Ihrer Frage passen.",
			ReasonBudgetExhausted: "Der Assistent hat sein Tageslimit erreicht. Darum ist dies ein Suchergebnis, keine formulierte Antwort: die Seiten dieser Website, die am besten zu Ihrer Frage passen.",
			ReasonClientShare:     "Sie haben dem Assistenten heute schon viele Fragen gestellt. Darum ist dies für den Rest des Tages ein Suchergebnis, keine formulierte Antwort: die Seiten dieser Website, die am besten zu Ihrer Frage passen.",
			ReasonPaced:           "Der Assistent ist gerade sehr gefragt. Darum ist dies ein Suchergebnis, keine formulierte Antwort: die Seiten dieser Website, die am besten zu Ihrer Frage passen. Formulierte Antworten gibt es im Lauf des Tages wieder.",
			ReasonUnavailable:     "Der Assistent ist gerade nicht verfügbar. Darum ist dies ein Suchergebnis, keine formulierte Antwort: die Seiten dieser Website, die am besten zu Ihrer Frage passen.",
		},
		noSearch:      "Der Assistent ist gerade nicht verfügbar, und diese Website hat keine Suche, die stattdessen antworten könnte. Bitte nutzen Sie die Kontaktseite.",
		nothingToFind: "Dies ist ein Suchergebnis, keine formulierte Antwort, und Ihre Nachricht enthält nichts, wonach sich suchen ließe. Fragen Sie bitte in Worten.",
		noMatch:       "Dies ist ein Suchergebnis, keine formulierte Antwort: Keine Seite dieser Website passt zu Ihrer Frage. Versuchen Sie es mit anderen Worten, oder nutzen Sie die Kontaktseite.",
		noAnswer:      "Darauf habe ich keine Antwort gefunden. Fragen Sie bitte mit anderen Worten, oder nutzen Sie die Kontaktseite.",
		rateLimited:   "Zu viele Anfragen. Bitte warten Sie einen Moment und versuchen Sie es dann noch einmal.",
		searchDown:    "Die Suche ist gerade nicht verfügbar. Bitte versuchen Sie es gleich noch einmal.",
		modelFailed:   "Der Assistent konnte das nicht nachschlagen. Bitte versuchen Sie es noch einmal, oder fragen Sie mit anderen Worten.",
		stoppedRounds: "\n\n(Ich habe nach %d Runden aufgehört, nachzuschlagen. Wenn das Ihre Frage nicht beantwortet, fragen Sie bitte etwas enger.)",
		stoppedAnswer: "Der Assistent hat aufgehört zu antworten. Bitte versuchen Sie es gleich noch einmal.",
		internal:      "Bei uns ist etwas schiefgegangen. Bitte versuchen Sie es gleich noch einmal.",
	},
}

// Languages are the languages the server's words exist in, sorted.
func Languages() []string {
	out := make([]string, 0, len(languages))
	for l := range languages {
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

// SupportedLanguage returns the primary subtag of tag ("de" for "de-AT") when the
// server's words exist in it, and "" otherwise.
func SupportedLanguage(tag string) string {
	primary, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(tag)), "-")
	primary, _, _ = strings.Cut(primary, "_")
	if _, ok := languages[primary]; ok {
		return primary
	}
	return ""
}

// InternalError is the message of an error event for a failure the visitor cannot
// act on, in lang.
func InternalError(lang string) string {
	return wordsFor(lang).internal
}

// wordsFor returns the words of lang, or English's when lang is not one of Languages.
func wordsFor(lang string) *words {
	if w, ok := languages[SupportedLanguage(lang)]; ok {
		return w
	}
	return languages[DefaultLanguage]
}

// stoppedAfter is the note after the last round of tool calls, in the turn's language.
func (w *words) stoppedAfter(rounds int) string {
	return fmt.Sprintf(w.stoppedRounds, rounds)
}
