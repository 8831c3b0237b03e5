// Layout checks shared by the e2e scripts: at a window size, every control of the header and
// the step bar is inside the window, on top (not covered by another element: the point at its
// centre hits it) and clickable; every tab opens its tool.
"use strict";

// Every visible control of the header and step bar, as selectors the page can find again.
async function controlsOf(page) {
  return page.$$eval("#top button, #top input, #top select, #stepbar button, #stepbar input", (els) => els
    .filter((e) => e.offsetParent !== null && !e.closest(".hidden"))
    .map((e, i) => {
      e.dataset.layoutProbe = String(i);
      return { probe: String(i), what: e.id ? "#" + e.id : `${e.tagName.toLowerCase()} "${(e.title || e.textContent || "").slice(0, 30)}"` };
    }));
}

// Throws on the first control that is outside the window or covered; returns how many it checked.
async function checkControls(page, size) {
  await page.setViewportSize(size);
  await page.click("#tabs button[data-tab='stepper']");
  const controls = await controlsOf(page);
  for (const c of controls) {
    const res = await page.$eval(`[data-layout-probe="${c.probe}"]`, (e) => {
      const r = e.getBoundingClientRect();
      const inside = r.width > 0 && r.height > 0 && r.left >= 0 && r.top >= 0 && r.right <= innerWidth && r.bottom <= innerHeight;
      const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
      return { inside, onTop: !!hit && (hit === e || e.contains(hit)), rect: [r.left, r.top, r.right, r.bottom].map(Math.round) };
    });
    if (!res.inside || !res.onTop) {
      throw new Error(`FAILED: at ${size.width}x${size.height} ${c.what} is ${res.inside ? "covered" : "outside the window"} at ${res.rect}`);
    }
  }
  // Every tab opens (a real click: it would fail on a covered button).
  const tabs = await page.$$eval("#tabs button", (bs) => bs.filter((b) => !b.classList.contains("hidden")).map((b) => b.dataset.tab));
  for (const t of tabs) {
    await page.click(`#tabs button[data-tab='${t}']`, { timeout: 3000 });
    const on = await page.$eval(`#tab-${t}`, (s) => s.classList.contains("active") && s.getBoundingClientRect().height > 100);
    if (!on) throw new Error(`FAILED: at ${size.width}x${size.height} the ${t} tab did not open`);
  }
  await page.click("#tabs button[data-tab='stepper']");
  // The code pane keeps room to read code.
  const code = await page.$eval("#source", (e) => e.getBoundingClientRect().height);
  if (code < 150) throw new Error(`FAILED: at ${size.width}x${size.height} the code pane is ${code}px high`);
  return controls.length + tabs.length;
}

module.exports = { checkControls };
