// Every page of the site from the Markdown folder (lib/content.ts). The folders api/,
// mcp/, webmcp/ and search/ are matched before this catch-all.
//
// Any other path renders app/not-found.tsx here, and proxy.ts answers it with 404.
// notFound() is no good for that: pages render per request (for the CSP nonce), and
// then Next answers a notFound() with an empty document that only JavaScript in the
// browser fills in, so a visitor landing on a missing page would get no content and no
// chat. Only file names, which proxy.ts skips, take that way, to answer 404 at all.
import type { Metadata } from "next";
import { notFound } from "next/navigation";
import { pageBySlug, pages } from "@/lib/content";
import ContactForm from "../contact-form";
import Markdown from "../markdown";
import NotFound, { metadata as notFoundMetadata } from "../not-found";

type Props = { params: Promise<{ slug?: string[] }> };

// Only the pages generateStaticParams lists. (Next enforces this for prerendered
// routes; these render per request, so the check in Page does it.)
export const dynamicParams = false;

export async function generateStaticParams(): Promise<{ slug: string[] }[]> {
  return [...(await pages()).values()].map((p) => ({ slug: p.slug }));
}

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  const page = await pageBySlug((await params).slug);
  if (!page) return { ...notFoundMetadata, robots: { index: false } };
  // The home page's title names the site already.
  return { title: page.path === "/" ? { absolute: page.title } : page.title };
}

export default async function Page({ params }: Props) {
  const { slug } = await params;
  const page = await pageBySlug(slug);
  if (!page) {
    if (/\.[^/]*$/.test(slug?.at(-1) ?? "")) notFound();
    return <NotFound />;
  }
  return (
    <article className="page">
      <Markdown html={page.html} />
      {page.path === "/contact" && <ContactForm />}
    </article>
  );
}
