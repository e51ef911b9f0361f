import type { NextConfig } from "next";

const nextConfig: NextConfig = {
  reactStrictMode: true,
  poweredByHeader: false,
  // Compression stays on: it skips answers with Cache-Control: no-transform, which the
  // sitetools proxy (lib/sitetools.ts) sets on every event stream, so chat events are
  // never gzipped or held back.
};

export default nextConfig;
