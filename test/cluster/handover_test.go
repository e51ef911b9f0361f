package cluster_test

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestHandoverReplayedAcrossReplicas: three replicas, and the same hand-overs sent to all
// of them at once, each several times: one after a chat answer (its id), and two
// visitors' without an id, one connecting directly, one through a trusted proxy. Every
// request is 204, and the owner's report counts three hand-overs: the answer once, each
// visitor once, whichever replicas took them (the replicas name a visitor alike: their
// secret is derived from the admin token they share). The replicas' counters add up to
// the same three.
func TestHandoverReplayedAcrossReplicas(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, nil)
	done, _, err := chatTurn(c.Replica(0), "What does an accessibility audit cost?")
	if err != nil || done.AnswerID == "" {
		t.Fatalf("chat: %+v, %v", done, err)
	}

	var sends []handoverSend
	for range 5 {
		sends = append(sends, handoverSend{answerID: done.AnswerID}, handoverSend{}, handoverSend{forwardedFor: "198.51.100.9"})
	}
	for i, status := range handOverAtOnce(c, sends) {
		if status != "204" {
			t.Errorf("hand-over %d %+v on replica %d: %s, want 204", i, sends[i], i%3, status)
		}
	}

	if got, want := countedHandovers(t, c), []string{"16", "16", "32"}; !slices.Equal(got, want) {
		t.Errorf("counted_handovers' key lengths %q, want %q: one answer, two visitors", got, want)
	}
	var report struct {
		Handovers struct{ Offered, Called int64 } `json:"handovers"`
	}
	if err := json.Unmarshal([]byte(adminGet(t, c.Admin(1), "/admin/report?days=1")), &report); err != nil {
		t.Fatal(err)
	}
	if report.Handovers.Called != 3 {
		t.Errorf("the report counts %d hand-overs called, want 3", report.Handovers.Called)
	}
	var called float64
	for i := range 3 {
		called += metric(t, c.Admin(i), "sitetools_handovers_total", map[string]string{"how": "called"})
	}
	if called != 3 {
		t.Errorf("sitetools_handovers_total{how=called} on the replicas adds up to %v; want 3", called)
	}
}

// handoverSend is one POST /api/handover: after the answer answerID ("": none), from the
// client forwardedFor says ("": the test's own address).
type handoverSend struct{ answerID, forwardedFor string }

// handOverAtOnce sends hand-over i to replica i%3, all at once, and returns their
// statuses ("204", or what came instead).
func handOverAtOnce(c *cluster, sends []handoverSend) []string {
	return atOnce(c, len(sends), func(base string, i int) string {
		v := map[string]string{"tool": "prefill_contact_form"}
		if sends[i].answerID != "" {
			v["answerId"] = sends[i].answerID
		}
		var header map[string]string
		if f := sends[i].forwardedFor; f != "" {
			header = map[string]string{"X-Forwarded-For": f} // the replicas trust 127.0.0.1
		}
		return postJSON(base+"/api/handover", v, header)
	})
}

// countedHandovers are the lengths of counted_handovers' keys, sorted.
func countedHandovers(t *testing.T, c *cluster) []string {
	return column(t, c, `SELECT length(key)::text FROM counted_handovers ORDER BY 1`)
}
