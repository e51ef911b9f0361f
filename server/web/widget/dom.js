// The one DOM helper of the widget's modules.

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
