package llm

import "strings"

// Prefixes are the task prefixes an embedding model expects before a search query and
// before a document passage. Many current retrieval models are trained with them and
// retrieve markedly worse when they are left out; docs/embeddings.md cites each model's card.
type Prefixes struct {
	Query    string
	Document string
}

// webSearchInstruction is the query instruction of instruction-tuned models, in the
// format their cards give; documents get none.
const webSearchInstruction = "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:"

// presets are the prefixes of the models docs/embeddings.md lists, each with the test of
// the model's name (see modelName) that selects it. The first match wins.
var presets = []struct {
	match func(name string) bool
	p     Prefixes
}{
	// nomic-embed-text v1, v1.5 and v2-moe.
	{prefixed("nomic-embed-text"), Prefixes{Query: "search_query: ", Document: "search_document: "}},
	{prefixed("embeddinggemma"), Prefixes{Query: "task: search result | query: ", Document: "title: none | text: "}},
	{prefixed("qwen3-embedding"), Prefixes{Query: webSearchInstruction}},
	// multilingual-e5-large-instruct: an instruction (with a space after "Query:"), not E5's prefixes.
	{func(n string) bool { return strings.Contains(n, "e5") && strings.Contains(n, "instruct") },
		Prefixes{Query: webSearchInstruction + " "}},
	// E5 (multilingual-e5-*, e5-*-v2), also under names like intfloat-multilingual-e5-large.
	{func(n string) bool { return strings.Contains(n, "multilingual-e5") || strings.HasPrefix(n, "e5-") },
		Prefixes{Query: "query: ", Document: "passage: "}},
	{prefixed("mxbai-embed-large"), Prefixes{Query: "Represent this sentence for searching relevant passages: "}},
	{prefixed("snowflake-arctic-embed2"), Prefixes{Query: "query: "}},
	{prefixed("snowflake-arctic-embed"), Prefixes{Query: "Represent this sentence for searching relevant passages: "}},
}

func prefixed(s string) func(string) bool {
	return func(name string) bool { return strings.HasPrefix(name, s) }
}

// PresetPrefixes returns the prefixes the model's card asks for, matched on the model's
// name without an Ollama tag (":latest", ":335m") or a namespace ("jeffh/…",
// "google/…"), case-insensitive. A model it does not know (BGE-M3, Granite, OpenAI's
// text-embedding-3) gets none.
func PresetPrefixes(model string) Prefixes {
	name := modelName(model)
	for _, p := range presets {
		if p.match(name) {
			return p.p
		}
	}
	return Prefixes{}
}

// modelName is model lower-cased, without a namespace path and a tag.
func modelName(model string) string {
	name := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	return name
}
