package sitesearch_test

import (
	"strings"
	"testing"

	"github.com/sitetools/sitetools/tools/sitesearch"
)

// TestModelMismatchNamesBothPrefixPairs: whenever the prefixes differ, the error names
// both pairs, the index's and the configuration's, each prefix quoted or "none"; with the
// same model it says which settings keep the index as it is; and an error about the
// model alone says nothing of prefixes.
func TestModelMismatchNamesBothPrefixPairs(t *testing.T) {
	nomic := func(q, d string) sitesearch.IndexModel {
		return sitesearch.IndexModel{Name: "nomic-embed-text", Dimensions: 768, QueryPrefix: q, DocumentPrefix: d}
	}
	const (
		none  = `query prefix none and document prefix none`
		nomP  = `query prefix "search_query: " and document prefix "search_document: "`
		e5P   = `query prefix "query: " and document prefix "passage: "`
		halfP = `query prefix "search_query: " and document prefix none`
	)
	for _, tc := range []struct {
		name       string
		have, want sitesearch.IndexModel
		say        []string
		never      []string
	}{
		{name: "index built without prefixes", have: nomic("", ""), want: nomic("search_query: ", "search_document: "),
			say: []string{"the index's: " + none, "the configuration's (EMBEDDINGS_QUERY_PREFIX, EMBEDDINGS_DOCUMENT_PREFIX): " + nomP,
				"to change the task prefixes", "EMBEDDINGS_QUERY_PREFIX=none EMBEDDINGS_DOCUMENT_PREFIX=none keeps this index"}},
		{name: "configuration without prefixes", have: nomic("search_query: ", "search_document: "), want: nomic("", ""),
			say: []string{"the index's: " + nomP, "the configuration's (EMBEDDINGS_QUERY_PREFIX, EMBEDDINGS_DOCUMENT_PREFIX): " + none,
				`EMBEDDINGS_QUERY_PREFIX="search_query: " EMBEDDINGS_DOCUMENT_PREFIX="search_document: " keeps this index`}},
		{name: "other prefixes", have: nomic("search_query: ", "search_document: "), want: nomic("query: ", "passage: "),
			say: []string{"the index's: " + nomP, "the configuration's (EMBEDDINGS_QUERY_PREFIX, EMBEDDINGS_DOCUMENT_PREFIX): " + e5P}},
		{name: "one prefix differs", have: nomic("search_query: ", "search_document: "), want: nomic("search_query: ", ""),
			say: []string{"the index's: " + nomP, "the configuration's (EMBEDDINGS_QUERY_PREFIX, EMBEDDINGS_DOCUMENT_PREFIX): " + halfP}},
		{name: "a line break", have: nomic("Instruct: find\nQuery: ", ""), want: nomic("", ""),
			say: []string{`the index's: query prefix "Instruct: find\nQuery: " and document prefix none`}},
		{name: "model and prefixes", have: nomic("search_query: ", "search_document: "),
			want: sitesearch.IndexModel{Name: "bge-m3", Dimensions: 1024},
			say: []string{"nomic-embed-text (768 dimensions), but this configuration uses bge-m3 (1024 dimensions)",
				"the index's: " + nomP, "the configuration's (EMBEDDINGS_QUERY_PREFIX, EMBEDDINGS_DOCUMENT_PREFIX): " + none, "to change the model"},
			never: []string{"keeps this index"}},
		{name: "model alone", have: nomic("search_query: ", "search_document: "),
			want:  sitesearch.IndexModel{Name: "nomic-embed-text-v2-moe", Dimensions: 768, QueryPrefix: "search_query: ", DocumentPrefix: "search_document: "},
			say:   []string{"but this configuration uses nomic-embed-text-v2-moe (768 dimensions)", "to change the model", "--reindex"},
			never: []string{"prefix"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := (&sitesearch.ErrModelMismatch{Have: tc.have, Want: tc.want}).Error()
			for _, s := range tc.say {
				if !strings.Contains(msg, s) {
					t.Errorf("the error does not say %q:\n%s", s, msg)
				}
			}
			for _, s := range tc.never {
				if strings.Contains(msg, s) {
					t.Errorf("the error says %q:\n%s", s, msg)
				}
			}
		})
	}
}
