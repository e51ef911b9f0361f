package llm_test

import (
	"testing"

	"github.com/sitetools/sitetools/internal/llm"
)

func TestPresetPrefixes(t *testing.T) {
	nomic := llm.Prefixes{Query: "search_query: ", Document: "search_document: "}
	gemma := llm.Prefixes{Query: "task: search result | query: ", Document: "title: none | text: "}
	e5 := llm.Prefixes{Query: "query: ", Document: "passage: "}
	for _, tc := range []struct {
		model string
		want  llm.Prefixes
	}{
		{"nomic-embed-text", nomic},
		{"nomic-embed-text:latest", nomic},
		{"nomic-embed-text-v2-moe", nomic},
		{"NOMIC-EMBED-TEXT:v1.5", nomic},
		{"embeddinggemma", gemma},
		{"embeddinggemma:300m", gemma},
		{"google/embeddinggemma-300m", gemma},
		{"jeffh/intfloat-multilingual-e5-large:f16", e5},
		{"intfloat/multilingual-e5-base", e5},
		{"qwen3-embedding:0.6b", llm.Prefixes{Query: "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:"}},
		{"jeffh/intfloat-multilingual-e5-large-instruct:f16", llm.Prefixes{Query: "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery: "}},
		{"mxbai-embed-large", llm.Prefixes{Query: "Represent this sentence for searching relevant passages: "}},
		{"snowflake-arctic-embed2:568m", llm.Prefixes{Query: "query: "}},
		{"snowflake-arctic-embed:335m", llm.Prefixes{Query: "Represent this sentence for searching relevant passages: "}},
		{"bge-m3", llm.Prefixes{}},
		{"all-minilm", llm.Prefixes{}},
		{"granite-embedding:278m", llm.Prefixes{}},
		{"text-embedding-3-small", llm.Prefixes{}},
		{"qwen2.5:1.5b", llm.Prefixes{}},
		{"", llm.Prefixes{}},
	} {
		if got := llm.PresetPrefixes(tc.model); got != tc.want {
			t.Errorf("PresetPrefixes(%q) = %+v, want %+v", tc.model, got, tc.want)
		}
	}
}
