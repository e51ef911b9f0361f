// app/api/handover/route.ts: POST /api/handover (the WebMCP bridge's count of a contact
// form it filled in) on the frontend's own origin, passed to sitetools.
import { sitetoolsRoute } from "@/lib/sitetools";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export const { POST, OPTIONS } = sitetoolsRoute;
