package cluster_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestFeedbackReplayedAcrossReplicas: three replicas, and one visitor's ratings of two
// answers sent to all of them at once, each several times. Every request is 204 (a
// replay is no error), and the owner's report counts each answer once: the same rating
// replayed on every replica counts one, and ratings that change while they race count
// one, under the rating the database kept. The replicas' counters add up to the first
// ratings only.
func TestFeedbackReplayedAcrossReplicas(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, nil)
	var ids []string
	for i := range 2 {
		// No chat model: the answers are search results, rated as "retrieval".
		done, _, err := chatTurn(c.Replica(i), "What does an accessibility audit cost?")
		if err != nil || done.Kind != "retrieval" || done.AnswerID == "" {
			t.Fatalf("chat: %+v, %v", done, err)
		}
		ids = append(ids, done.AnswerID)
	}

	// The first answer: the same thumbs-down five times on each replica. The second: a
	// thumbs-up on one replica, thumbs-down with two reasons on the others.
	var sends []rating
	for range 5 {
		sends = append(sends, rating{ids[0], "down", "wrong"}, rating{ids[0], "down", "wrong"}, rating{ids[0], "down", "wrong"},
			rating{ids[1], "up", ""}, rating{ids[1], "down", "outdated"}, rating{ids[1], "down", "other"})
	}
	for i, status := range rateAtOnce(c, sends) {
		if status != "204" {
			t.Errorf("rating %d %+v on replica %d: %s, want 204", i, sends[i], i%3, status)
		}
	}

	kept := ratedAnswers(t, c)
	if len(kept) != 2 || !slices.Contains(kept, "retrieval/down/wrong") {
		t.Fatalf("rated_answers %q: want the first answer's thumbs-down and one row for the second", kept)
	}
	checkRatings(t, adminGet(t, c.Admin(2), "/admin/report?days=1"), kept)
	var first float64
	for i := range 3 {
		first += metric(t, c.Admin(i), "sitetools_answer_feedback_total", map[string]string{"kind": "retrieval"})
	}
	if first != 2 {
		t.Errorf("sitetools_answer_feedback_total on the replicas adds up to %v; want 2, the first rating of each answer", first)
	}
}

// rating is one rating of a retrieval answer.
type rating struct{ id, rating, reason string }

// rateAtOnce sends rating i to replica i%3, all at once, and returns their statuses
// ("204", or what came instead).
func rateAtOnce(c *cluster, sends []rating) []string {
	return atOnce(c, len(sends), func(base string, i int) string {
		v := map[string]string{"answerId": sends[i].id, "kind": "retrieval", "rating": sends[i].rating}
		if sends[i].reason != "" {
			v["reason"] = sends[i].reason
		}
		return postJSON(base+"/api/feedback", v, nil)
	})
}

// ratedAnswers are the ratings the database kept, one per rated answer (kind/rating/reason).
func ratedAnswers(t *testing.T, c *cluster) []string {
	return column(t, c, `SELECT detail FROM rated_answers ORDER BY detail`)
}

// checkRatings checks that the report counts exactly the ratings kept, one per answer.
func checkRatings(t *testing.T, body string, kept []string) {
	t.Helper()
	var up, down int64
	reasons := map[string]int64{}
	for _, detail := range kept {
		if parts := strings.Split(detail, "/"); parts[1] == "up" {
			up++
		} else {
			down++
			reasons[parts[2]]++
		}
	}
	var report struct {
		Feedback []struct {
			Kind    string           `json:"kind"`
			Up      int64            `json:"up"`
			Down    int64            `json:"down"`
			Reasons map[string]int64 `json:"reasons"`
		} `json:"feedback"`
	}
	if err := json.Unmarshal([]byte(body), &report); err != nil {
		t.Fatal(err)
	}
	for _, f := range report.Feedback {
		switch {
		case f.Kind != "retrieval" && f.Up+f.Down != 0:
			t.Errorf("feedback of %s answers: %+v", f.Kind, f)
		case f.Kind == "retrieval" && (f.Up != up || f.Down != down || !maps.Equal(f.Reasons, reasons)):
			t.Errorf("report's retrieval feedback up %d, down %d, reasons %v; want %d, %d, %v (the rows %q)",
				f.Up, f.Down, f.Reasons, up, down, reasons, kept)
		}
	}
}
