// app/webmcp/[file]/route.ts: the WebMCP bridge module and the relay's widget, served by
// sitetools, on the frontend's own origin (the bridge calls /api/chat/tools same-origin).
import { sitetoolsRoute } from "@/lib/sitetools";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export const { GET, HEAD } = sitetoolsRoute;
