package assistant

import (
	"reflect"
	"strings"
	"testing"
)

// TestWordsComplete: every language has every text, an intro for every reason English
// has one for, the same placeholders, and its own words rather than English's.
func TestWordsComplete(t *testing.T) {
	en := reflect.ValueOf(*languages[DefaultLanguage])
	if len(languages) < 2 {
		t.Fatalf("languages %v, want English and German at least", Languages())
	}
	for lang, w := range languages {
		v := reflect.ValueOf(*w)
		for i := range v.NumField() {
			name := v.Type().Field(i).Name
			got, want := v.Field(i), en.Field(i)
			if got.Kind() == reflect.Map {
				for _, k := range want.MapKeys() {
					text := got.MapIndex(k)
					if !text.IsValid() || strings.TrimSpace(text.String()) == "" {
						t.Errorf("%s: %s has no text for %s", lang, name, k)
					} else if lang != DefaultLanguage && text.String() == want.MapIndex(k).String() {
						t.Errorf("%s: %s for %s is the English text", lang, name, k)
					}
				}
				if got.Len() != want.Len() {
					t.Errorf("%s: %s has %d texts, English %d", lang, name, got.Len(), want.Len())
				}
				continue
			}
			if strings.TrimSpace(got.String()) == "" {
				t.Errorf("%s: %s is empty", lang, name)
				continue
			}
			if lang != DefaultLanguage && got.String() == want.String() {
				t.Errorf("%s: %s is the English text", lang, name)
			}
			if n, m := strings.Count(got.String(), "%"), strings.Count(want.String(), "%"); n != m {
				t.Errorf("%s: %s has %d placeholders, English %d", lang, name, n, m)
			}
		}
	}
}

func TestSupportedLanguage(t *testing.T) {
	for tag, want := range map[string]string{
		"de": "de", "DE": "de", "de-AT": "de", "de_CH": "de", " en-GB ": "en",
		"fr": "", "": "", "d": "", "deu": "", "<b>": "",
	} {
		if got := SupportedLanguage(tag); got != want {
			t.Errorf("SupportedLanguage(%q) = %q, want %q", tag, got, want)
		}
	}
}
