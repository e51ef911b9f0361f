// app/api/feedback/route.ts: POST /api/feedback (a visitor's rating of a chat answer) on
// the frontend's own origin, passed to sitetools.
import { sitetoolsRoute } from "@/lib/sitetools";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export const { POST, OPTIONS } = sitetoolsRoute;
