// app/mcp/route.ts: the remote MCP endpoint on the frontend's own origin, passed to
// sitetools (Streamable HTTP: POST with JSON or event-stream answers; GET and DELETE
// are answered 405 by sitetools, as a stateless server does).
import { sitetoolsRoute } from "@/lib/sitetools";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export const { GET, POST, DELETE, OPTIONS } = sitetoolsRoute;
