// Command wrkbare is the baseline of the bench's out-of-process catalog figure: a bare
// net/http server, a process of its own, answering every request with the response the
// service gave for GET /api/chat/tools, its bytes and headers, and nothing else (no
// log, no metrics, no routing). Revalidation is answered as the service answers it.
//
//	wrkbare -addr 127.0.0.1:8081 -body catalog.json -header 'ETag: "x"' -header 'Vary: Origin'
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/textproto"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type headers []string

func (h *headers) String() string     { return strings.Join(*h, "; ") }
func (h *headers) Set(s string) error { *h = append(*h, s); return nil }

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	bodyPath := flag.String("body", "", "file holding the response body")
	var hs headers
	flag.Var(&hs, "header", "a response header, 'Name: value' (repeatable)")
	flag.Parse()
	body, err := os.ReadFile(*bodyPath)
	if err != nil {
		log.Fatal(err)
	}
	h, err := parseHeaders(hs)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{
		Addr:    *addr,
		Handler: handler(h, body),
		// The settings of the service's own http.Server.
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(slog.DiscardHandler, slog.LevelWarn),
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	go func() {
		<-stop
		_ = srv.Close()
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

func parseHeaders(hs []string) (http.Header, error) {
	h := http.Header{}
	for _, s := range hs {
		k, v, ok := strings.Cut(s, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("-header %q: want 'Name: value'", s)
		}
		h.Add(textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(k)), strings.TrimSpace(v))
	}
	return h, nil
}

// handler writes h and body; a request whose If-None-Match names the ETag gets 304
// with the validators and no body, as from the service.
func handler(h http.Header, body []byte) http.HandlerFunc {
	etag := h.Get("ETag")
	length := strconv.Itoa(len(body))
	return func(w http.ResponseWriter, r *http.Request) {
		out := w.Header()
		for k, v := range h {
			out[k] = v
		}
		if etag != "" && r.Header.Get("If-None-Match") == etag {
			out.Del("Content-Length")
			out.Del("Content-Type")
			w.WriteHeader(http.StatusNotModified)
			return
		}
		out["Content-Length"] = []string{length}
		_, _ = w.Write(body)
	}
}
