package sitesearch

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"
)

// Synonyms are the site owner's word groups (SEARCH_SYNONYMS_FILE), applied to a query
// before it is searched: the full-text leg also looks for the synonyms of the query's
// words and phrases, and the text embedded for the query carries them.
//
// The file holds one group per line, under a [lang] section ([en], [de], … or [*] for
// every language; before any section, [*]):
//
//	price, cost, fee, charge, rate        equivalent: each stands for all the others
//	cheap, affordable => price            one-way: a query with "cheap" also looks for "price"
//
// A term is a word or a phrase of up to four words, matched case-insensitively on word
// boundaries. "#" starts a comment.
type Synonyms struct {
	rules []synonymRule
}

type synonymRule struct {
	lang string   // "*" for every language
	from []string // the terms that trigger it, each as lower-case words joined by " "
	to   []string // what they add
}

// maxSynonymPhrase is the longest phrase a term may be, in words.
const maxSynonymPhrase = 4

// ParseSynonyms reads a synonyms file. Every problem names its line; all are reported.
func ParseSynonyms(r io.Reader) (*Synonyms, error) {
	s := &Synonyms{}
	lang := "*"
	var errs []error
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case strings.HasPrefix(line, "["):
			l, err := parseSection(line)
			if err != nil {
				errs = append(errs, fmt.Errorf("line %d: %w", n, err))
				continue
			}
			lang = l
		default:
			rule, err := parseRule(line)
			if err != nil {
				errs = append(errs, fmt.Errorf("line %d: %w", n, err))
				continue
			}
			rule.lang = lang
			s.rules = append(s.rules, rule)
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	return s, errors.Join(errs...)
}

func parseSection(line string) (string, error) {
	l, ok := strings.CutSuffix(strings.TrimPrefix(line, "["), "]")
	l = strings.ToLower(strings.TrimSpace(l))
	if !ok || l == "" || (l != "*" && !isLangTag(l)) {
		return "", fmt.Errorf("a section is a language in brackets, such as [en], [de] or [*], not %q", line)
	}
	return l, nil
}

func isLangTag(s string) bool {
	if len(s) < 2 || len(s) > 8 {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && r != '-' {
			return false
		}
	}
	return true
}

func parseRule(line string) (synonymRule, error) {
	left, right, oneWay := strings.Cut(line, "=>")
	from, err := parseTerms(left)
	if err != nil {
		return synonymRule{}, err
	}
	if !oneWay {
		if len(from) < 2 {
			return synonymRule{}, fmt.Errorf("a group needs at least two terms separated by commas, or \"a => b\": %q", line)
		}
		return synonymRule{from: from, to: from}, nil
	}
	if strings.Contains(right, "=>") {
		return synonymRule{}, fmt.Errorf("a line has at most one \"=>\": %q", line)
	}
	to, err := parseTerms(right)
	if err != nil {
		return synonymRule{}, err
	}
	return synonymRule{from: from, to: to}, nil
}

func parseTerms(list string) ([]string, error) {
	var out []string
	for _, t := range strings.Split(list, ",") {
		words := queryWords(t)
		switch {
		case len(words) == 0:
			return nil, fmt.Errorf("an empty term in %q", strings.TrimSpace(list))
		case len(words) > maxSynonymPhrase:
			return nil, fmt.Errorf("the term %q is longer than %d words", strings.TrimSpace(t), maxSynonymPhrase)
		}
		if term := strings.Join(words, " "); !slices.Contains(out, term) {
			out = append(out, term)
		}
	}
	return out, nil
}

// queryWords splits text into lower-case words: runs of letters and digits.
func queryWords(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// Expand returns the terms the synonyms add to query, for a query in lang ("": any
// language), without those the query already has. A nil Synonyms adds nothing.
func (s *Synonyms) Expand(query, lang string) []string {
	if s == nil {
		return nil
	}
	words := queryWords(query)
	has := map[string]bool{}
	for i := range words {
		for n := 1; n <= maxSynonymPhrase && i+n <= len(words); n++ {
			has[strings.Join(words[i:i+n], " ")] = true
		}
	}
	lang = strings.ToLower(lang)
	var out []string
	for _, r := range s.rules {
		if lang != "" && r.lang != "*" && r.lang != lang && !strings.HasPrefix(lang, r.lang+"-") {
			continue
		}
		if !slices.ContainsFunc(r.from, func(t string) bool { return has[t] }) {
			continue
		}
		for _, t := range r.to {
			if !has[t] {
				has[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// Function words that tell a short query's language apart.
var (
	germanWords  = wordSet("der die das und ist ich wie was wo wann warum kann könnt können ihr euch sie mit für nicht ein eine einen einem auf zu bei von den dem des im am gibt habt haben hat mein meine unser unsere welche welcher wer noch auch oder")
	englishWords = wordSet("the and is i how what where when why can could you your do does did with for not a an on to at of in are have has my our which who there this that")
)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// DetectLang guesses whether a query is German ("de") or English ("en") from its
// function words and its letters; "" when it cannot tell.
func DetectLang(query string) string {
	de, en := 0, 0
	for _, w := range queryWords(query) {
		if germanWords[w] {
			de++
		}
		if englishWords[w] {
			en++
		}
		if strings.ContainsAny(w, "äöüß") {
			de++
		}
	}
	switch {
	case de > en:
		return "de"
	case en > de:
		return "en"
	}
	return ""
}
