package searcheval

import (
	"encoding/json"
	"io"
	"math"
)

// jsonScore is a Score for machines: counts and rates.
type jsonScore struct {
	Name string  `json:"name,omitempty"`
	N    int     `json:"n"`
	Hit1 float64 `json:"hit1"`
	Hit3 float64 `json:"hit3"`
	MRR  float64 `json:"mrr"`
	// Found1 and Found3 are the questions with an expected page first, and in the first three.
	Found1 int `json:"found1"`
	Found3 int `json:"found3"`
}

func round4(f float64) float64 { return math.Round(f*1e4) / 1e4 }

func toJSON(name string, s Score) jsonScore {
	return jsonScore{Name: name, N: s.N, Hit1: round4(s.Hit1Rate()), Hit3: round4(s.Hit3Rate()), MRR: round4(s.MRR()), Found1: s.Hit1, Found3: s.Hit3}
}

type jsonScores struct {
	All    jsonScore   `json:"all"`
	Labels []jsonScore `json:"labels"`
	Langs  []jsonScore `json:"languages"`
}

func scoresJSON(s Scores) jsonScores {
	out := jsonScores{All: toJSON("", s.All), Labels: []jsonScore{}, Langs: []jsonScore{}}
	for _, g := range s.Labels {
		out.Labels = append(out.Labels, toJSON(g.Name, g.Score))
	}
	for _, g := range s.Langs {
		out.Langs = append(out.Langs, toJSON(g.Name, g.Score))
	}
	return out
}

type jsonMiss struct {
	Where    string   `json:"where"`
	Question string   `json:"question"`
	Label    string   `json:"label,omitempty"`
	Lang     string   `json:"lang,omitempty"`
	Expected []string `json:"expected"`
	Rank     int      `json:"rank"` // 0: not among the Depth results
	Instead  []Page   `json:"instead"`
}

type jsonColumn struct {
	Index string `json:"index"`
	Note  string `json:"note,omitempty"`
	jsonScores
	Missed   []jsonMiss     `json:"missed"`
	Degraded map[string]int `json:"degraded"`
	Cost     Cost           `json:"cost"`
}

func columnJSON(c Column) jsonColumn {
	out := jsonColumn{Index: c.Index, Note: c.Note, jsonScores: scoresJSON(ScoreRuns(c.Runs)), Missed: []jsonMiss{}, Degraded: c.Degraded(), Cost: c.Cost}
	for _, r := range c.Runs {
		if !r.Missed() {
			continue
		}
		q := r.Question
		out.Missed = append(out.Missed, jsonMiss{Where: q.Where, Question: q.Question, Label: q.Label, Lang: q.Lang,
			Expected: q.Pages, Rank: r.Rank, Instead: append([]Page{}, r.Ranked[:min(3, len(r.Ranked))]...)})
	}
	return out
}

// difference is the candidate's scores minus the live ones'.
func difference(live, cand Scores) jsonScores {
	d := func(name string, l, c Score) jsonScore {
		return jsonScore{Name: name, N: l.N, Hit1: round4(c.Hit1Rate() - l.Hit1Rate()), Hit3: round4(c.Hit3Rate() - l.Hit3Rate()),
			MRR: round4(c.MRR() - l.MRR()), Found1: c.Hit1 - l.Hit1, Found3: c.Hit3 - l.Hit3}
	}
	out := jsonScores{All: d("", live.All, cand.All), Labels: []jsonScore{}, Langs: []jsonScore{}}
	for i, g := range live.Labels {
		out.Labels = append(out.Labels, d(g.Name, g.Score, cand.Labels[i].Score))
	}
	for i, g := range live.Langs {
		out.Langs = append(out.Langs, d(g.Name, g.Score, cand.Langs[i].Score))
	}
	return out
}

// WriteJSON writes the report as one JSON document: the file, the depth, and per index
// the scores (rates as fractions), the missed questions with what ranked instead, the
// searches that ran on full-text only and the cost; with a candidate, the difference.
func (r Report) WriteJSON(w io.Writer) error {
	doc := struct {
		File       string      `json:"file"`
		Questions  int         `json:"questions"`
		Depth      int         `json:"depth"`
		Live       jsonColumn  `json:"live"`
		Candidate  *jsonColumn `json:"candidate,omitempty"`
		Difference *jsonScores `json:"difference,omitempty"`
	}{File: r.File, Questions: len(r.Questions), Depth: Depth, Live: columnJSON(r.Live)}
	if r.Candidate != nil {
		c := columnJSON(*r.Candidate)
		d := difference(ScoreRuns(r.Live.Runs), ScoreRuns(r.Candidate.Runs))
		doc.Candidate, doc.Difference = &c, &d
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(doc)
}
