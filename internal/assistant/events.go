package assistant

// Event names of a chat turn's stream.
const (
	EventDelta      = "message.delta"
	EventToolCall   = "tool.call"
	EventToolResult = "tool.result"
	EventSources    = "sources"
	EventDone       = "message.done"
	EventError      = "error"
)

// Modes and reasons of message.done.
const (
	ModeLLM       = "llm"
	ModeRetrieval = "retrieval"

	ReasonStop            = "stop"
	ReasonMaxToolRounds   = "max_tool_rounds"
	ReasonNotConfigured   = "llm_not_configured"
	ReasonBudgetExhausted = "llm_budget_exhausted"
	ReasonClientShare     = "llm_client_share_spent" // this visitor's share of the day is spent
	ReasonPaced           = "llm_budget_paced"       // the day's budget is released over the day
	ReasonUnavailable     = "llm_unavailable"
)

// CodeModelError is the error event's code for a model that could not form a valid
// tool request even after a correction.
const CodeModelError = "model_error"

// Event is one event of a turn; Data marshals to the event's JSON.
type Event struct {
	Name string
	Data any
}

// Delta is a piece of the answer's text.
type Delta struct {
	Text string `json:"text"`
}

// ToolCall announces a tool call that has started.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// ToolResult reports that a call returned; OK is false for any failure.
type ToolResult struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	OK   bool   `json:"ok"`
}

// Sources are the pages the answer drew on.
type Sources struct {
	Items []Source `json:"items"`
}

// Source is one page of the site.
type Source struct {
	Title  string `json:"title"`
	URL    string `json:"url"`
	Anchor string `json:"anchor,omitempty"`
}

// Done ends a turn.
type Done struct {
	Usage  Usage  `json:"usage"`
	Mode   string `json:"mode"`
	Reason string `json:"reason"`
	// Kind is what a visitor rates: KindModel, KindRetrieval or KindDegraded.
	Kind string `json:"kind"`
	// AnswerID names the answer for feedback (POST /api/feedback); the server sets it.
	AnswerID string `json:"answerId,omitempty"`
	// ContactOffered says the answer pointed the visitor to the site's contact page or
	// form; counted as a hand-over offered, not sent.
	ContactOffered bool `json:"-"`
}

// The kinds of an answer.
const (
	KindModel     = "model"     // the model's answer
	KindRetrieval = "retrieval" // search results: no model is configured
	KindDegraded  = "degraded"  // search results because the model was unavailable or over budget
)

// AnswerKind is the kind of an answer of mode, ended for reason.
func AnswerKind(mode, reason string) string {
	switch {
	case mode == ModeLLM:
		return KindModel
	case reason == ReasonNotConfigured:
		return KindRetrieval
	}
	return KindDegraded
}

// Usage is what a turn cost at the provider.
type Usage struct {
	PromptTokens     int `json:"promptTokens"`
	CompletionTokens int `json:"completionTokens"`
	TotalTokens      int `json:"totalTokens"`
	ProviderCalls    int `json:"providerCalls"`
}

// Error ends a turn that failed after its stream started.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}
