package server

import (
	"golang.org/x/text/language"

	"github.com/sitetools/sitetools/internal/assistant"
)

// chatTags are the languages of the chat's own texts, English first: the matcher's
// answer when nothing matches.
var chatTags = func() []language.Tag {
	tags := []language.Tag{language.Make(assistant.DefaultLanguage)}
	for _, l := range assistant.Languages() {
		if l != assistant.DefaultLanguage {
			tags = append(tags, language.Make(l))
		}
	}
	return tags
}()

var chatMatcher = language.NewMatcher(chatTags)

// chatLanguage is the language of the texts the server writes into a chat turn: the
// request's "lang" when the server has its texts in it (the widget sends the language
// it shows), else the best match of the Accept-Language header, else English. A tag
// that names no language the server has, or is not a tag at all, is passed over, never
// refused.
func chatLanguage(requested, acceptLanguage string) string {
	if l := assistant.SupportedLanguage(requested); l != "" {
		return l
	}
	prefs, _, err := language.ParseAcceptLanguage(acceptLanguage)
	if err != nil || len(prefs) == 0 {
		return assistant.DefaultLanguage
	}
	if _, i, conf := chatMatcher.Match(prefs...); conf != language.No {
		base, _ := chatTags[i].Base()
		return base.String()
	}
	return assistant.DefaultLanguage
}
