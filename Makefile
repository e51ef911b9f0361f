# sitetools — the two commands a newcomer needs are `make demo` and `make test`.
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)
GO ?= go
PG := deploy/dev/postgres.sh
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS := -s -w -X github.com/sitetools/sitetools/internal/cli.version=$(VERSION)

DEMO_LISTEN ?= 127.0.0.1:8080
DEMO_ADMIN_LISTEN ?= 127.0.0.1:9090
DEMO_ADMIN_TOKEN ?= demo-admin-token-change-me

.PHONY: build demo test fuzz bench bench-semantic lint clean pg-stop

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/sitetools .

## demo: run the service with the demo content on http://127.0.0.1:8080
demo: build
	@deploy/dev/browser.sh npm && \
	  url=$$($(PG) createdb sitetools_demo) && \
	  DATABASE_URL=$$url bin/sitetools migrate && \
	  DATABASE_URL=$$url bin/sitetools ingest --dir deploy/demo/site --base-url http://$(DEMO_LISTEN) && \
	  echo "sitetools demo on http://$(DEMO_LISTEN) (admin http://$(DEMO_ADMIN_LISTEN), token $(DEMO_ADMIN_TOKEN)); Ctrl-C stops" && \
	  DATABASE_URL=$$url LISTEN_ADDR=$(DEMO_LISTEN) ADMIN_LISTEN_ADDR=$(DEMO_ADMIN_LISTEN) \
	  ADMIN_TOKEN=$(DEMO_ADMIN_TOKEN) SITE_URL=http://$(DEMO_LISTEN) AVAILABILITY_CONFIG=deploy/availability.example.yaml \
	  SITE_PAGES_DIR=deploy/demo/site CHAT_PERSONA_FILE=deploy/demo/persona.md \
	  SEARCH_SYNONYMS_FILE=deploy/demo/synonyms.txt exec bin/sitetools serve

## test: provision PostgreSQL with pgvector (or use TEST_DATABASE_URL) and run every test.
## The browser side (Chromium, npm packages, next build) is set up while the Go tests run;
## its log is in .browser-setup.log. One PDF test runs first without the race detector: it
## compiles PDFium into the user's cache (seconds; minutes under -race), which the rest load.
test: build
	@url=$$($(PG) start) && \
	  deploy/dev/proxies.sh && deploy/dev/php.sh && \
	  { deploy/dev/browser.sh >.browser-setup.log 2>&1 & browser=$$!; } && \
	  $(GO) vet ./... && (cd deploy && $(GO) vet ./...) && \
	  $(GO) test -count=1 -run '^TestReadPages$$' ./internal/pdftext && \
	  TEST_DATABASE_URL=$$url $(GO) test -race -count=1 -timeout 15m ./... && \
	  (cd deploy && TEST_DATABASE_URL=$$url SITETOOLS_BIN=$(CURDIR)/bin/sitetools $(GO) test -race -count=1 ./...) && \
	  { wait $$browser || { cat .browser-setup.log >&2; echo "deploy/dev/browser.sh failed" >&2; exit 1; }; } && \
	  cd server/web && node --test test/*.test.js && \
	  TEST_DATABASE_URL=$$url SITETOOLS_BIN=$(CURDIR)/bin/sitetools node --test --test-concurrency=1 --test-timeout=300000 e2e/*.e2e.test.js

## fuzz: run the request-body fuzzer (FUZZTIME, default 60s)
FUZZTIME ?= 60s
fuzz:
	@url=$$($(PG) start) && \
	  TEST_DATABASE_URL=$$url $(GO) test ./server -run '^$$' -fuzz '^FuzzCallBody$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s

## bench: throughput and latency against baselines measured in the same run; then in Chromium,
## the chat's rendering and the site search's keystroke-to-results through Next.js
## (docs/benchmarks-browser-search.md)
bench: build
	@command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; } || \
	  { echo "make bench needs wrk (apt-get install wrk)" >&2; exit 1; }
	@url=$$($(PG) start) && TEST_DATABASE_URL=$$url $(GO) run ./bench && \
	  deploy/dev/browser.sh && cd server/web && { node bench/render.bench.js; render=$$?; \
	  TEST_DATABASE_URL=$$url SITETOOLS_BIN=$(CURDIR)/bin/sitetools GO=$(GO) node bench/search.bench.js && exit $$render; }

## bench-semantic: the relevance questions through a real sentence model (the Universal Sentence
## Encoder lite on Node, bench/semantic): the query embedded as asked vs. with its synonyms and
## corrections appended, beside the lexical variants; prints top-1, top-3 and MRR per kind
bench-semantic:
	@url=$$($(PG) start) && TEST_DATABASE_URL=$$url GO=$(GO) bench/semantic/run.sh

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./... && (cd deploy && $(GO) vet ./...)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	cd deploy && $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

pg-stop:
	@$(PG) stop

clean: pg-stop
	rm -rf bin .pg .browser-setup.log deploy/nextjs/.next
