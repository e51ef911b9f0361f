// The browser's own WebMCP (document.modelContext): the bridge registers its tools there
// too, all under one AbortController (a new catalog withdraws them and registers the new
// set).
//
// A name can be registered once in a document, and the first registration keeps it
// (Chromium 156: registerTool() rejects with "Duplicate tool name"). A form that is a view
// of a tool (forms.js) may hold the name first: the contact form the page came with. The
// form is then that tool on this page, with the same call behind it, and the bridge says
// nothing. When the form leaves (a router showed another page), the bridge registers the
// tool in its place.

import { hasView } from './forms.js';

/** modelContext is the browser's WebMCP object, if it has one. */
export function modelContext() {
  const mc = document.modelContext ?? navigator.modelContext;
  return mc && typeof mc.registerTool === 'function' ? mc : null;
}

// Annotations for the browser's agent (WebMCP draft: readOnlyHint, untrustedContentHint,
// consequentialHint). Every server tool's result carries text the site or its visitors
// wrote (pages, snippets, titles) or may in a later version: untrusted content, to be
// read as data. Of the browser-local tools, resume_conversation returns what the
// visitor and the assistant typed; save_conversation writes into the visitor's chat,
// behind a dialog.
const UNTRUSTED_LOCAL = new Set(['resume_conversation']);
const CONSEQUENTIAL_LOCAL = new Set(['save_conversation']);

function nativeAnnotations(tool, local) {
  return {
    readOnlyHint: tool.annotations?.readOnlyHint === true,
    untrustedContentHint: local ? UNTRUSTED_LOCAL.has(tool.name) : true,
    consequentialHint: local ? CONSEQUENTIAL_LOCAL.has(tool.name) : tool.annotations?.readOnlyHint !== true,
  };
}

let native = null; // the AbortController of the current registrations
let wanted = []; // the tools of the current set
const held = new Set(); // the names of those registered

/**
 * registerNative registers every tool with the browser's WebMCP under one shared signal,
 * withdrawing an earlier set first. A name the page registered itself stays the page's:
 * a warning (none for a form that is a view of the tool), and the other tools still
 * register.
 */
export async function registerNative(tools) {
  withdrawNative();
  if (!modelContext()) return;
  native = new AbortController();
  wanted = tools;
  await register(tools, native);
}

/** fillGaps registers the tools of the current set that are not registered: a view that held a name has gone. */
export function fillGaps() {
  if (!native) return Promise.resolve();
  return register(wanted.filter((t) => !held.has(t.name)), native);
}

async function register(tools, ctl) {
  const mc = modelContext();
  const results = await Promise.allSettled(
    tools.map((t) =>
      Promise.resolve().then(() =>
        mc.registerTool(
          {
            name: t.name,
            title: t.title || undefined,
            description: t.description,
            inputSchema: t.inputSchema,
            annotations: nativeAnnotations(t, t.local),
            execute: (input, opts) => t.run(input, opts?.signal),
          },
          { signal: ctl.signal },
        ),
      ),
    ),
  );
  if (ctl !== native) return;
  results.forEach((r, i) => {
    const name = tools[i].name;
    if (r.status === 'fulfilled') {
      held.add(name);
      return;
    }
    const taken = r.reason && r.reason.name === 'InvalidStateError';
    if (taken && hasView(name)) return;
    const why = taken ? 'the page registered a tool of that name already' : String(r.reason?.message ?? r.reason);
    console.warn(`sitetools bridge: ${name} is not offered to the browser's agent: ${why}.`);
  });
}

/** withdrawNative takes back every tool the bridge registered with the browser. */
export function withdrawNative() {
  native?.abort();
  native = null;
  held.clear();
}
