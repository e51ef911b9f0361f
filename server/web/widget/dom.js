// The DOM helpers of the widget's modules.

/** h builds an element: h('button', {class: 'x', type: 'button'}, 'text', child). */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === undefined || v === null) continue;
    el.setAttribute(k, v === true ? '' : v);
  }
  el.append(...children);
  return el;
}

/** icon is a decorative 24 × 24 SVG of one path d in the text's colour, with the path's attrs. */
export function icon(d, attrs) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('focusable', 'false');
  const p = document.createElementNS(ns, 'path');
  p.setAttribute('fill', 'currentColor');
  for (const [k, v] of Object.entries(attrs || {})) p.setAttribute(k, v);
  p.setAttribute('d', d);
  svg.appendChild(p);
  return svg;
}
