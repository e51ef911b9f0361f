package web

// LanguageName is a language's name in itself ("Deutsch" for de), as the pages' language
// switcher shows it; the code in capitals for a language it does not know.
func LanguageName(lang string) string {
	if lang == "" {
		return ""
	}
	return languageName(lang)
}
