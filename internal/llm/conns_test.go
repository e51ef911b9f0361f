package llm_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sitetools/sitetools/internal/llm"
)

// Concurrent chat streams to one provider over HTTP/1.1 keep their connections: rounds
// of eight streams at once dial eight connections, not six more each round (the
// standard transport keeps two idle connections per host).
func TestChatStreamsReuseConnections(t *testing.T) {
	const streams, rounds = 8, 3
	var dials atomic.Int64
	var mu sync.Mutex
	arrived, all := 0, make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if arrived++; arrived == streams {
			close(all) // the round's streams are all open at once
		}
		wait := all
		mu.Unlock()
		<-wait
		w.Header().Set("Content-Type", "text/event-stream")
		// One write at the end: the stream's end arrives with its last data.
		fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	chat, err := llm.NewChat(llm.ChatOptions{BaseURL: srv.URL + "/v1", Model: "m", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	for range rounds {
		mu.Lock()
		arrived, all = 0, make(chan struct{})
		mu.Unlock()
		var wg sync.WaitGroup
		for range streams {
			wg.Go(func() {
				req := llm.ChatRequest{Messages: []llm.ChatMessage{{Role: "user", Content: "Hi"}}}
				if _, err := chat.Stream(context.Background(), req, func(string) error { return nil }); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	// A connection may now and then go back to the pool a moment after its stream
	// returned; the standard transport would dial 8 + 2 × 6 = 20.
	if n := dials.Load(); n > streams+streams/2 {
		t.Errorf("%d connections dialed for %d rounds of %d concurrent streams", n, rounds, streams)
	}
}
