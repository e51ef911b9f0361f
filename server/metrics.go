package server

import (
	"cmp"
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sitetools/sitetools/tools"
)

// metrics are the service's Prometheus series. Labels are tool names, channels, route
// templates and codes: never arguments or client addresses.
type metrics struct {
	reg          *prometheus.Registry
	toolCalls    *prometheus.CounterVec
	toolDuration *prometheus.HistogramVec
	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	// chatAnswers counts finished chat turns by mode (llm, retrieval) and reason; a
	// retrieval answer with a reason other than llm_not_configured is a degraded one.
	chatAnswers *prometheus.CounterVec
	// series caches the children of httpRequests and httpDuration: resolving labels
	// costs more than counting.
	series sync.Map // httpKey → httpSeries
}

type httpKey struct {
	route, method string
	status        int
}

type httpSeries struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

func newMetrics(reg *prometheus.Registry) *metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &metrics{
		reg: reg,
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitetools_tool_calls_total",
			Help: "Tool calls by tool, channel and outcome (ok, tool_error, or an error code).",
		}, []string{"tool", "channel", "outcome"}),
		toolDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sitetools_tool_call_duration_seconds",
			Help:    "Duration of tool calls.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"tool", "channel"}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitetools_http_requests_total",
			Help: "HTTP requests by route template, method and status.",
		}, []string{"route", "method", "status"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sitetools_http_request_duration_seconds",
			Help:    "Duration of HTTP requests by route template.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route"}),
		chatAnswers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitetools_chat_answers_total",
			Help: "Chat turns answered, by mode (llm, retrieval) and reason (stop, max_tool_rounds, llm_not_configured, llm_budget_exhausted, llm_client_share_spent, llm_budget_paced, llm_unavailable).",
		}, []string{"mode", "reason"}),
	}
	m.reg.MustRegister(m.toolCalls, m.toolDuration, m.httpRequests, m.httpDuration, m.chatAnswers,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) intercept(ctx context.Context, call *tools.Call, next tools.Invoker) (*tools.Result, error) {
	start := time.Now()
	res, err := next(ctx, call)
	outcome := "ok"
	switch {
	case err != nil:
		outcome = tools.ErrorCode(err)
	case res.IsError:
		outcome = "tool_error"
	}
	channel := cmp.Or(call.Request.Channel, tools.ChannelInternal)
	m.toolCalls.WithLabelValues(call.Tool.Name, string(channel), outcome).Inc()
	m.toolDuration.WithLabelValues(call.Tool.Name, string(channel)).Observe(time.Since(start).Seconds())
	return res, err
}

func (m *metrics) observeHTTP(route, method string, status int, d time.Duration) {
	switch method {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
	default:
		method = "other"
	}
	k := httpKey{route, method, status}
	v, ok := m.series.Load(k)
	if !ok {
		v, _ = m.series.LoadOrStore(k, httpSeries{
			requests: m.httpRequests.WithLabelValues(route, method, strconv.Itoa(status)),
			duration: m.httpDuration.WithLabelValues(route),
		})
	}
	s := v.(httpSeries)
	s.requests.Inc()
	s.duration.Observe(d.Seconds())
}

// metricsHandler handles GET /metrics on the admin listener.
func (a *App) metricsHandler() echo.HandlerFunc {
	return echo.WrapHandler(promhttp.HandlerFor(a.metrics.reg, promhttp.HandlerOpts{}))
}
