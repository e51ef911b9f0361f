# syntax=docker/dockerfile:1
# Multi-stage build: a static binary on distroless, run as a non-root user, with the
# WebMCP relay's widget from npm beside it.
FROM node:22-bookworm-slim AS web
WORKDIR /web
COPY server/web/package.json server/web/package-lock.json ./
COPY server/web/stubs ./stubs
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=devel
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/sitetools/sitetools/internal/cli.version=${VERSION}" \
      -o /out/sitetools .
# The PDF reader (PDFium in WebAssembly) compiled once, here: serve, under its memory limit
# and on a read-only file system, only loads it (docs/pdf.md). The cache is written for its
# owner alone; any user the container runs as may read it.
RUN PDF_CACHE_DIR=/out/pdfium /out/sitetools pdf-cache && chmod -R a+rX /out/pdfium

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/sitetools /usr/local/bin/sitetools
COPY --from=build /out/pdfium /usr/share/sitetools/pdfium
COPY --from=web /web/node_modules/@jason.today/webmcp/src/webmcp.js /usr/share/sitetools/webmcp.js
USER 65532:65532
ENV LISTEN_ADDR=:8080 WEBMCP_WIDGET_PATH=/usr/share/sitetools/webmcp.js PDF_CACHE_DIR=/usr/share/sitetools/pdfium
EXPOSE 8080 9090
ENTRYPOINT ["/usr/local/bin/sitetools"]
CMD ["serve"]
