// The demo site's own behaviour: client-side navigation between its pages (so that the
// chat widget, /webmcp/chat.js, and its relay connection survive a page change), and the
// contact form, which sends nothing anywhere.

import { guardSameOrigin } from '/webmcp/bridge.js';

const SWAPPED = ['sitetools-header', 'sitetools-main', 'sitetools-footer'];

// isPage: a page of this site, by the widget's one same-origin guard.
function isPage(url) {
  return guardSameOrigin(url.href, location.origin).ok;
}

const announcer = document.createElement('p');
announcer.className = 'visually-hidden';
announcer.setAttribute('role', 'status');
announcer.setAttribute('aria-live', 'polite');
document.body.appendChild(announcer);

/**
 * navigate shows the page at href without reloading the tab: the header, main content
 * and footer are swapped for the new page's. It resolves to {status, url, title}.
 */
export async function navigate(href, { push = true } = {}) {
  const url = new URL(href, location.href);
  if (!isPage(url)) {
    location.assign(url.href);
    return { status: 0, url: url.pathname, title: '' };
  }
  let res;
  try {
    res = await fetch(url.pathname + url.search, { headers: { Accept: 'text/html' }, credentials: 'same-origin' });
  } catch {
    location.assign(url.href);
    return { status: 0, url: url.pathname, title: '' };
  }
  const final = new URL(res.url || url.href);
  if (!(res.headers.get('Content-Type') || '').startsWith('text/html') || final.origin !== location.origin) {
    location.assign(url.href);
    return { status: res.status, url: url.pathname, title: '' };
  }
  const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
  if (!SWAPPED.every((id) => doc.getElementById(id) && document.getElementById(id))) {
    location.assign(url.href);
    return { status: res.status, url: url.pathname, title: '' };
  }
  for (const id of SWAPPED) document.getElementById(id).replaceWith(document.adoptNode(doc.getElementById(id)));
  document.title = doc.title;
  document.documentElement.lang = doc.documentElement.lang || document.documentElement.lang;
  // The page's pointers for the widget (its contact page, its relay guide) follow it.
  for (const name of ['sitetools:contact', 'sitetools:guide']) {
    const meta = doc.querySelector(`meta[name="${name}"]`);
    let ours = document.querySelector(`meta[name="${name}"]`);
    if (!meta) {
      ours?.remove();
      continue;
    }
    if (!ours) {
      ours = document.createElement('meta');
      ours.name = name;
      document.head.appendChild(ours);
    }
    ours.content = meta.content;
  }
  const path = final.pathname + final.search + url.hash;
  if (push) history.pushState({}, '', path);
  const target = url.hash ? document.getElementById(decodeURIComponent(url.hash.slice(1))) : null;
  if (target) target.scrollIntoView();
  else window.scrollTo(0, 0);
  const main = document.getElementById('sitetools-main');
  main.focus({ preventScroll: true });
  const title = main.querySelector('h1')?.textContent?.trim() || doc.title;
  announcer.textContent = title;
  document.dispatchEvent(new CustomEvent('sitetools:page', { detail: { url: path, status: res.status, title } }));
  return { status: res.status, url: final.pathname + final.search, title };
}

document.addEventListener('click', (e) => {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = e.target instanceof Element ? e.target.closest('a[href]') : null;
  if (!a || (a.target && a.target !== '_self') || a.hasAttribute('download')) return;
  const url = new URL(a.href, location.href);
  if (!isPage(url)) return;
  // A link to a section of this page is the browser's job.
  if (url.pathname === location.pathname && url.search === location.search && url.hash) return;
  e.preventDefault();
  navigate(url.href);
});

window.addEventListener('popstate', () => {
  navigate(location.href, { push: false });
});

// The bridge's open_page asks here first, so the relay connection stays up.
document.addEventListener('sitetools:navigate', (e) => {
  e.preventDefault();
  e.detail.done = navigate(e.detail.url);
});

// The contact form sends nothing: its method is "dialog", which posts nowhere even
// without this script, and a submit only shows a confirmation on the page. An agent's
// submit, which the bridge answers (prefill_contact_form: it fills, never sends), comes
// here prevented already. The fields the visitor must fill say so with aria-required: as
// "required" they would be required arguments of the tool the form is a view of.
document.addEventListener('submit', (e) => {
  const form = e.target;
  if (e.defaultPrevented || !(form instanceof HTMLFormElement) || !form.matches('[data-contact-form]')) return;
  e.preventDefault();
  const empty = [...form.querySelectorAll('[aria-required="true"]')].find((el) => el.value.trim() === '');
  if (empty) {
    empty.setCustomValidity(form.dataset.requiredText || 'Please fill in this field.');
    empty.addEventListener('input', () => empty.setCustomValidity(''), { once: true });
    empty.reportValidity();
    return;
  }
  const status = form.querySelector('.form-status');
  if (status) status.textContent = status.dataset.sentText || 'Nothing was sent.';
});
