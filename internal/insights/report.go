package insights

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sitetools/sitetools/internal/postgres/pgerr"
)

// NeverCitedDays is the window of "pages never cited".
const NeverCitedDays = 30

// Report is what the owner reads: `sitetools report`, GET /admin/report.
type Report struct {
	Days int    `json:"days"`
	From string `json:"from"` // first day, UTC
	To   string `json:"to"`   // last day (today), UTC

	Answers   AnswerCounts   `json:"answers"`
	Feedback  []FeedbackRow  `json:"feedback"` // one row per answer kind
	Searches  SearchCounts   `json:"searches"`
	Handovers HandoverCounts `json:"handovers"`
	// FairUse is what the fair-use rules did: counts only.
	FairUse FairUseCounts `json:"fairUse"`
	// TopPages are the pages cited most often in answers, then most often a search's top
	// result; at most 10.
	TopPages []PageRow `json:"topPages"`
	// NeverCited are the indexed pages no answer cited in the last 30 days.
	NeverCited PageList `json:"neverCited"`
	Daily      []DayRow `json:"daily"` // newest first, days with any count
	// Index is the last successful full sync of the index with the site.
	Index IndexSync `json:"index"`
}

// IndexSync is what the last successful full sync of the index with the site says of
// the index's size: when it finished, and how many pages the sitemap listed beyond
// INGEST_MAX_PAGES, which it left out (the newest are indexed).
type IndexSync struct {
	LastFullSync string `json:"lastFullSync"` // RFC 3339, UTC; "" before the first
	LeftOut      int    `json:"leftOut"`
	// Rebuild is the rebuild for another model under way (or stopped, to resume), nil
	// when there is none.
	Rebuild *IndexRebuild `json:"rebuild"`
}

// IndexRebuild is a rebuild of the index's vectors for another model: which, since when,
// and how many chunks have their new vector of all.
type IndexRebuild struct {
	Model      string `json:"model"`
	Dimensions int    `json:"dimensions"`
	Started    string `json:"started"` // RFC 3339, UTC
	Done       int64  `json:"done"`
	Total      int64  `json:"total"`
}

// AnswerCounts are the chat's answers by kind, and why answers fell back to search
// results (reason → count; a retrieval answer's reason is llm_not_configured).
type AnswerCounts struct {
	Total    int64            `json:"total"`
	ByKind   map[string]int64 `json:"byKind"`
	Fallback map[string]int64 `json:"fallbackReasons"`
}

// FeedbackRow is the ratings of one answer kind.
type FeedbackRow struct {
	Kind    string           `json:"kind"`
	Answers int64            `json:"answers"`
	Up      int64            `json:"up"`
	Down    int64            `json:"down"`
	Reasons map[string]int64 `json:"reasons"` // of the thumbs-down: Reasons and "none"
}

// SearchCounts are searches, and those that found nothing relevant, in all and by channel.
type SearchCounts struct {
	Total     int64                    `json:"total"`
	NoResult  int64                    `json:"noResult"`
	ByChannel map[string]ChannelCounts `json:"byChannel"`
}

// ChannelCounts are the searches of one channel.
type ChannelCounts struct {
	Total    int64 `json:"total"`
	NoResult int64 `json:"noResult"`
}

// HandoverCounts are hand-overs to a person.
type HandoverCounts struct {
	Offered int64 `json:"offered"` // answers that pointed to the contact page
	Called  int64 `json:"called"`  // contact forms a visitor's assistant filled in
}

// FairUseCounts are the fair-use rules at work, by budget kind (llm, embedding) or, for
// the proof of work, by outcome (issued, solved, missing, invalid, expired, replayed).
type FairUseCounts struct {
	// SharesReached counts clients that reached their daily share (each once a day and kind).
	SharesReached map[string]int64 `json:"sharesReached"`
	// Paced counts calls the paced ceiling refused.
	Paced       map[string]int64 `json:"paced"`
	ProofOfWork map[string]int64 `json:"proofOfWork"`
}

// PageRow is one page's coverage.
type PageRow struct {
	URL   string `json:"url"`
	Title string `json:"title"` // "" for a page no longer in the index
	Cited int64  `json:"cited"`
	Top   int64  `json:"topResult"`
}

// PageList is a count of pages and the first of them.
type PageList struct {
	Count   int       `json:"count"`
	Indexed int       `json:"indexed"` // pages in the index
	Pages   []PageRef `json:"pages"`   // at most 100, by url
}

// PageRef is a page of the index.
type PageRef struct {
	URL   string `json:"url"`
	Title string `json:"title"`
}

// DayRow is one day's counts.
type DayRow struct {
	Day              string `json:"day"`
	Answers          int64  `json:"answers"`
	Up               int64  `json:"up"`
	Down             int64  `json:"down"`
	Searches         int64  `json:"searches"`
	NoResult         int64  `json:"noResult"`
	HandoversOffered int64  `json:"handoversOffered"`
	HandoversCalled  int64  `json:"handoversCalled"`
}

// Read returns the report of the last days days (UTC, today included).
func Read(ctx context.Context, pool *pgxpool.Pool, days int) (*Report, error) {
	today := time.Now().UTC().Truncate(24 * time.Hour)
	from := today.AddDate(0, 0, 1-days)
	r := &Report{Days: days, From: from.Format(time.DateOnly), To: today.Format(time.DateOnly),
		Answers:  AnswerCounts{ByKind: map[string]int64{}, Fallback: map[string]int64{}},
		Searches: SearchCounts{ByChannel: map[string]ChannelCounts{}},
		FairUse:  FairUseCounts{SharesReached: map[string]int64{}, Paced: map[string]int64{}, ProofOfWork: map[string]int64{}},
		TopPages: []PageRow{}, Daily: []DayRow{}, NeverCited: PageList{Pages: []PageRef{}}}
	feedback := map[string]*FeedbackRow{}
	for _, k := range Kinds {
		feedback[k] = &FeedbackRow{Kind: k, Reasons: map[string]int64{}}
	}
	rows, err := pool.Query(ctx, `SELECT to_char(day, 'YYYY-MM-DD'), event, detail, n FROM activity_daily
		WHERE day >= $1 ORDER BY day DESC`, from)
	if err != nil {
		return nil, pgerr.Wrap("insights.Read", err)
	}
	var day DayRow
	for rows.Next() {
		var d, event, detail string
		var n int64
		if err := rows.Scan(&d, &event, &detail, &n); err != nil {
			rows.Close()
			return nil, pgerr.Wrap("insights.Read", err)
		}
		if d != day.Day {
			if day.Day != "" {
				r.Daily = append(r.Daily, day)
			}
			day = DayRow{Day: d}
		}
		r.count(&day, feedback, event, detail, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, pgerr.Wrap("insights.Read", err)
	}
	if day.Day != "" {
		r.Daily = append(r.Daily, day)
	}
	for _, k := range Kinds {
		feedback[k].Answers = r.Answers.ByKind[k]
		r.Feedback = append(r.Feedback, *feedback[k])
	}
	if err := r.readPages(ctx, pool, from); err != nil {
		return nil, err
	}
	if err := r.readIndex(ctx, pool); err != nil {
		return nil, err
	}
	return r, nil
}

// readIndex reads the rebuild under way, if any, and the last successful full sync (on
// serve's timer or a publish hook's for the whole site; not `sitetools ingest`, which
// records none).
func (r *Report) readIndex(ctx context.Context, pool *pgxpool.Pool) error {
	var rb IndexRebuild
	var started time.Time
	err := pool.QueryRow(ctx, `SELECT model, dimensions, started_at,
		(SELECT count(*) FROM chunks WHERE embedding_next IS NOT NULL), (SELECT count(*) FROM chunks) FROM index_rebuild`).
		Scan(&rb.Model, &rb.Dimensions, &started, &rb.Done, &rb.Total)
	switch {
	case err == nil:
		rb.Started = started.UTC().Format(time.RFC3339)
		r.Index.Rebuild = &rb
	case !errors.Is(err, pgx.ErrNoRows):
		return pgerr.Wrap("insights.Read", err)
	}
	var at *time.Time
	err = pool.QueryRow(ctx, `SELECT finished_at, left_out FROM index_syncs
		WHERE all_pages AND outcome IN ('ok', 'partial') ORDER BY finished_at DESC LIMIT 1`).Scan(&at, &r.Index.LeftOut)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return pgerr.Wrap("insights.Read", err)
	}
	r.Index.LastFullSync = at.UTC().Format(time.RFC3339)
	return nil
}

// count adds one row of activity_daily to the report and to its day.
func (r *Report) count(day *DayRow, feedback map[string]*FeedbackRow, event, detail string, n int64) {
	parts := strings.Split(detail, "/")
	switch event {
	case EventSearch, EventSearchNoResult:
		c := r.Searches.ByChannel[detail]
		if event == EventSearch {
			r.Searches.Total, c.Total, day.Searches = r.Searches.Total+n, c.Total+n, day.Searches+n
		} else {
			r.Searches.NoResult, c.NoResult, day.NoResult = r.Searches.NoResult+n, c.NoResult+n, day.NoResult+n
		}
		r.Searches.ByChannel[detail] = c
	case EventAnswer:
		r.Answers.Total += n
		day.Answers += n
		r.Answers.ByKind[parts[0]] += n
		if len(parts) == 2 && parts[0] != KindModel {
			r.Answers.Fallback[parts[1]] += n
		}
	case EventFeedback:
		f := feedback[parts[0]]
		if f == nil || len(parts) != 3 {
			return
		}
		if parts[1] == "up" {
			f.Up, day.Up = f.Up+n, day.Up+n
		} else {
			f.Down, day.Down = f.Down+n, day.Down+n
			f.Reasons[parts[2]] += n
		}
	case EventHandoverOffered:
		r.Handovers.Offered += n
		day.HandoversOffered += n
	case EventHandoverCalled:
		r.Handovers.Called += n
		day.HandoversCalled += n
	case EventFairUse:
		if len(parts) != 2 {
			return
		}
		switch parts[0] {
		case FairUseShareReached:
			r.FairUse.SharesReached[parts[1]] += n
		case FairUsePaced:
			r.FairUse.Paced[parts[1]] += n
		case FairUseProofOfWork:
			r.FairUse.ProofOfWork[parts[1]] += n
		}
	}
}

// readPages reads the most cited pages of the report's days and the pages of the index
// no answer cited in the last NeverCitedDays days.
func (r *Report) readPages(ctx context.Context, pool *pgxpool.Pool, from time.Time) error {
	rows, err := pool.Query(ctx, `
		SELECT d.url, coalesce(p.title, ''), d.cited, d.top FROM (
			SELECT url, sum(cited)::bigint AS cited, sum(top)::bigint AS top FROM page_daily
			WHERE day >= $1 GROUP BY url) d
		LEFT JOIN pages p ON p.url = d.url
		ORDER BY d.cited DESC, d.top DESC, d.url LIMIT 10`, from)
	if err != nil {
		return pgerr.Wrap("insights.Read", err)
	}
	top, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (PageRow, error) {
		var p PageRow
		return p, row.Scan(&p.URL, &p.Title, &p.Cited, &p.Top)
	})
	if err != nil {
		return pgerr.Wrap("insights.Read", err)
	}
	r.TopPages = append(r.TopPages, top...)
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pages`).Scan(&r.NeverCited.Indexed); err != nil {
		return pgerr.Wrap("insights.Read", err)
	}
	rows, err = pool.Query(ctx, `
		SELECT p.url, p.title, count(*) OVER () FROM pages p
		WHERE NOT EXISTS (SELECT 1 FROM page_daily d
			WHERE d.url = p.url AND d.cited > 0 AND d.day > (now() AT TIME ZONE 'UTC')::date - $1::int)
		ORDER BY p.url LIMIT 100`, NeverCitedDays)
	if err != nil {
		return pgerr.Wrap("insights.Read", err)
	}
	defer rows.Close()
	for rows.Next() {
		var p PageRef
		var total int
		if err := rows.Scan(&p.URL, &p.Title, &total); err != nil {
			return pgerr.Wrap("insights.Read", err)
		}
		r.NeverCited.Pages, r.NeverCited.Count = append(r.NeverCited.Pages, p), total
	}
	return pgerr.Wrap("insights.Read", rows.Err())
}
