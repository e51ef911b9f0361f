// Package insights counts what a site owner learns about the assistant and the search
// without keeping anything a visitor typed: ratings of answers, searches that found
// nothing relevant, answers that fell back to search results, hand-overs to the contact
// page, and which pages answers cite and searches find first. Everything is a count per
// UTC day (tables activity_daily and page_daily, kept as long as the ledger); the only
// texts are words of a fixed vocabulary and the addresses of the site's own pages.
//
// A Recorder adds counts up in memory and writes them within FlushEvery in one
// statement per table, so that a busy site costs the database a few writes a second,
// not one per search; a replica that is killed loses at most that much. Ratings and
// hand-overs are the exceptions: each counts once (per answer; a hand-over without an
// answer per visitor and day), so Rate and Handover write it at once beside the row that
// says it was counted (rating.go, handover.go).
package insights

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitetools/sitetools/internal/postgres/pgerr"
	"github.com/sitetools/sitetools/tools"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// The events of activity_daily.
const (
	EventSearch          = "search"
	EventSearchNoResult  = "search_no_result"
	EventAnswer          = "answer"
	EventFeedback        = "feedback"
	EventHandoverOffered = "handover_offered"
	EventHandoverCalled  = "handover_called"
	EventFairUse         = "fair_use"
)

// The details of EventFairUse, each followed by "/" and a budget kind (llm, embedding)
// or, for the proof of work, an outcome.
const (
	FairUseShareReached = "share_reached" // a client reached its daily share (once per client, day and kind)
	FairUsePaced        = "paced"         // a call the paced ceiling refused
	FairUseProofOfWork  = "pow"           // pow/issued, pow/solved, pow/missing, pow/invalid, pow/expired, pow/replayed
)

// Answer kinds: what a visitor rates.
const (
	KindModel     = "model"     // the chat model's answer
	KindRetrieval = "retrieval" // search results: the site has no model
	KindDegraded  = "degraded"  // search results because the model was unavailable or over budget
)

// Kinds are the answer kinds, in the order reports list them.
var Kinds = []string{KindModel, KindRetrieval, KindDegraded}

// Ratings and the reasons a thumbs-down may give.
var (
	Ratings = []string{"up", "down"}
	Reasons = []string{"wrong", "outdated", "unanswered", "other"}
)

// ReasonNone is the reason of a rating that gave none.
const ReasonNone = "none"

// DefaultFlushEvery is how long counts wait in memory at most.
const DefaultFlushEvery = time.Second

// Options configure a Recorder.
type Options struct {
	Logger     *slog.Logger          // nil discards
	Registerer prometheus.Registerer // nil: no metrics
	FlushEvery time.Duration         // 0: DefaultFlushEvery
	Now        func() time.Time      // nil: time.Now
}

// Recorder counts. A nil *Recorder counts nothing.
type Recorder struct {
	pool    *pgxpool.Pool
	opts    Options
	metrics *metrics

	mu       sync.Mutex
	activity map[activityKey]int64
	pages    map[pageKey]pageCount
	timer    *time.Timer // armed while counts wait
	flushing sync.Mutex  // one flush at a time
}

type activityKey struct {
	day           string
	event, detail string
}

type pageKey struct{ day, url string }

type pageCount struct{ cited, top int64 }

// New returns a recorder writing to pool.
func New(pool *pgxpool.Pool, opts Options) *Recorder {
	opts.Logger = cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	opts.FlushEvery = cmp.Or(opts.FlushEvery, DefaultFlushEvery)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Recorder{pool: pool, opts: opts, metrics: newMetrics(opts.Registerer),
		activity: map[activityKey]int64{}, pages: map[pageKey]pageCount{}}
}

func (r *Recorder) day() string { return r.opts.Now().UTC().Format(time.DateOnly) }

// Search counts a search on channel: found says whether any result was relevant, top is
// the page of the first result ("" for none).
func (r *Recorder) Search(channel, top string, found bool) {
	if r == nil {
		return
	}
	channel = vocabulary(channel)
	r.metrics.search(channel, found)
	r.mu.Lock()
	defer r.mu.Unlock()
	day := r.day()
	r.activity[activityKey{day, EventSearch, channel}]++
	if !found {
		r.activity[activityKey{day, EventSearchNoResult, channel}]++
	}
	if top != "" && found {
		c := r.pages[pageKey{day, top}]
		c.top++
		r.pages[pageKey{day, top}] = c
	}
	r.arm()
}

// Answer counts a finished chat answer of kind (with the reason message.done gave), the
// pages it cited, and whether it pointed the visitor to the contact page.
func (r *Recorder) Answer(kind, reason string, cited []string, contactOffered bool) {
	if r == nil {
		return
	}
	kind, reason = vocabulary(kind), vocabulary(reason)
	if contactOffered {
		r.metrics.handovers.WithLabelValues("offered").Inc()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	day := r.day()
	r.activity[activityKey{day, EventAnswer, kind + "/" + reason}]++
	if contactOffered {
		r.activity[activityKey{day, EventHandoverOffered, kind}]++
	}
	for _, u := range cited {
		c := r.pages[pageKey{day, u}]
		c.cited++
		r.pages[pageKey{day, u}] = c
	}
	r.arm()
}

// FairUse counts a fair-use event: what (FairUseShareReached, FairUsePaced,
// FairUseProofOfWork) and its kind or outcome, both words of a fixed vocabulary.
func (r *Recorder) FairUse(what, kind string) {
	if r == nil {
		return
	}
	r.add(EventFairUse, what+"/"+vocabulary(kind))
}

func (r *Recorder) add(event, detail string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.activity[activityKey{r.day(), event, detail}]++
	r.arm()
}

// arm schedules a flush unless one is scheduled; r.mu is held.
func (r *Recorder) arm() {
	if r.timer != nil {
		return
	}
	r.timer = time.AfterFunc(r.opts.FlushEvery, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.Flush(ctx); err != nil {
			r.opts.Logger.Warn("could not write the insight counts; they are kept for the next try", "err", err.Error())
		}
	})
}

// Flush writes the counts waiting in memory. Counts it could not write wait for the
// next flush.
func (r *Recorder) Flush(ctx context.Context) error {
	if r == nil {
		return nil
	}
	r.flushing.Lock()
	defer r.flushing.Unlock()
	r.mu.Lock()
	activity, pages := r.activity, r.pages
	r.activity, r.pages = map[activityKey]int64{}, map[pageKey]pageCount{}
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	r.mu.Unlock()
	if len(activity) == 0 && len(pages) == 0 {
		return nil
	}
	err := r.write(ctx, activity, pages)
	if err != nil {
		r.mu.Lock()
		for k, n := range activity {
			r.activity[k] += n
		}
		for k, c := range pages {
			p := r.pages[k]
			r.pages[k] = pageCount{p.cited + c.cited, p.top + c.top}
		}
		r.arm()
		r.mu.Unlock()
	}
	return err
}

func (r *Recorder) write(ctx context.Context, activity map[activityKey]int64, pages map[pageKey]pageCount) error {
	var days, events, details []string
	var ns []int64
	for k, n := range activity {
		days, events, details, ns = append(days, k.day), append(events, k.event), append(details, k.detail), append(ns, n)
	}
	var pdays, urls []string
	var cited, top []int64
	for k, c := range pages {
		pdays, urls, cited, top = append(pdays, k.day), append(urls, k.url), append(cited, c.cited), append(top, c.top)
	}
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return pgerr.Wrap("insights.Flush", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if len(days) > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO activity_daily (day, event, detail, n)
			SELECT * FROM unnest($1::date[], $2::text[], $3::text[], $4::bigint[])
			ON CONFLICT (day, event, detail) DO UPDATE SET n = activity_daily.n + excluded.n`,
			days, events, details, ns); err != nil {
			return pgerr.Wrap("insights.Flush", err)
		}
	}
	if len(pdays) > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO page_daily (day, url, cited, top)
			SELECT * FROM unnest($1::date[], $2::text[], $3::bigint[], $4::bigint[])
			ON CONFLICT (day, url) DO UPDATE SET cited = page_daily.cited + excluded.cited, top = page_daily.top + excluded.top`,
			pdays, urls, cited, top); err != nil {
			return pgerr.Wrap("insights.Flush", err)
		}
	}
	return pgerr.Wrap("insights.Flush", tx.Commit(ctx))
}

// vocabulary keeps a label within activity_daily's vocabulary (lower-case letters,
// '_' and '/'): labels come from the code, never from a visitor, and one that is not
// is recorded as "other" rather than refused by the table's check.
func vocabulary(s string) string {
	if s == "" || len(s) > 64 || strings.IndexFunc(s, func(c rune) bool { return (c < 'a' || c > 'z') && c != '_' && c != '/' }) >= 0 {
		return "other"
	}
	return s
}

// metrics are the recorder's Prometheus series: vocabulary labels only, no page address.
type metrics struct {
	feedback  *prometheus.CounterVec
	searches  *prometheus.CounterVec
	handovers *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		feedback: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitetools_answer_feedback_total",
			Help: "Visitors' ratings of chat answers, by answer kind (model, retrieval, degraded), rating (up, down) and reason (wrong, outdated, unanswered, other, none); the first rating of each answer only (the owner's report follows a changed one).",
		}, []string{"kind", "rating", "reason"}),
		searches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitetools_searches_total",
			Help: "Searches by channel, and whether any result was relevant (found=false: nothing matched the words, a synonym or a correction, and no semantic neighbour was close).",
		}, []string{"channel", "found"}),
		handovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitetools_handovers_total",
			Help: "Hand-overs to a person: offered (an answer pointed to the contact page) or called (a browser tool filled in the contact form; once per answer id, or per visitor and day without one, on whichever replica took it).",
		}, []string{"how"}),
	}
	if reg != nil {
		reg.MustRegister(m.feedback, m.searches, m.handovers)
		// Every series exists from the start at 0, so that a rate counts the first rating.
		m.handovers.WithLabelValues("offered")
		m.handovers.WithLabelValues("called")
		for _, kind := range Kinds {
			m.feedback.WithLabelValues(kind, "up", ReasonNone)
			for _, reason := range append([]string{ReasonNone}, Reasons...) {
				m.feedback.WithLabelValues(kind, "down", reason)
			}
		}
	}
	return m
}

func (m *metrics) search(channel string, found bool) {
	m.searches.WithLabelValues(channel, fmt.Sprint(found)).Inc()
}

// Intercept is a registry interceptor that counts searches: their channel, whether any
// result was relevant and the page of the first (see sitesearch.Outcome).
func (r *Recorder) Intercept(ctx context.Context, call *tools.Call, next tools.Invoker) (*tools.Result, error) {
	if r == nil {
		return next(ctx, call)
	}
	ctx, outcome := sitesearch.WithOutcome(ctx)
	res, err := next(ctx, call)
	if outcome.Searched {
		r.Search(string(cmp.Or(call.Request.Channel, tools.ChannelInternal)), outcome.Top, outcome.Found)
	}
	return res, err
}
