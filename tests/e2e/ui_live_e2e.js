// Drives squall's web UI over a live recording in headless Chromium: node ui_live_e2e.js URL
// SCREENSHOT_DIR. The program (tests/e2e/test_ui.py) recorded app.handle, placed a code
// bookmark in it, and has the module `shop` loaded but not instrumented.
"use strict";
const fs = require("fs");
const path = require("path");
const { chromium } = require("playwright-core");
const { checkControls } = require("./layout");

const [url, shots] = process.argv.slice(2);
if (!url || !shots) {
  console.error("usage: node ui_live_e2e.js URL SCREENSHOT_DIR");
  process.exit(2);
}
fs.mkdirSync(shots, { recursive: true });

function check(cond, what) {
  if (!cond) throw new Error("FAILED: " + what);
  console.log("ok: " + what);
}

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  const shot = (name) => page.screenshot({ path: path.join(shots, name + ".png") });
  try {
    await page.goto(url);
    await page.waitForSelector("body[data-ready='1']", { timeout: 15000 });
    check(await page.isVisible("#live-ctl") && await page.isVisible("#tabs button[data-tab='browser']"), "live controls and the Browser tab are shown");
    check((await page.textContent("#program")).includes("(live)"), "the header says live");

    // The live header has more controls: none covered at any size (it was at 1280 px).
    for (const size of [{ width: 1024, height: 700 }, { width: 1280, height: 800 }, { width: 2560, height: 1440 }]) {
      const n = await checkControls(page, size);
      check(true, `live, ${size.width}x${size.height}: ${n} controls and tabs inside the window, uncovered, clickable`);
    }
    await page.setViewportSize({ width: 1280, height: 800 });

    // A bookmark placed from code lands in the code that placed it, not in squall.bookmark.
    await page.keyboard.press("6");
    await page.waitForSelector("#bookmarks tr.code-bookmark");
    await page.locator("#bookmarks tr.code-bookmark td").first().click();
    await page.waitForFunction(() => document.querySelector("#tab-stepper").classList.contains("active")
      && document.querySelector("#frame-title").textContent.includes("handle"));
    const title = await page.textContent("#frame-title");
    check(!title.includes("bookmark"), "the code bookmark opens app.handle where it was placed: " + title);
    // The title can change before the code pane has moved its cursor: wait for it to settle.
    await page.waitForFunction(() => (document.querySelector("#source").getAttribute("data-cur") || "").startsWith("5:"),
      null, { timeout: 5000 }).catch(() => {});
    const cur = await page.getAttribute("#source", "data-cur") || "";
    check(cur.startsWith("5:"), "on the bookmark's line (5): " + cur);

    // The custom power step by predicate, run in the live program as for a file.
    await page.keyboard.press("g");
    await page.waitForFunction(() => document.querySelector("#idx-input").value === "0");
    await page.fill("#power-text", "name == 'm' and v == 2");
    await page.press("#power-text", "Enter");
    await page.waitForFunction(() => document.querySelector("#idx-input").value !== "0");
    await page.waitForSelector('body[data-busy="0"]');
    const pe = await page.evaluate(() => S.frame.entry);
    check(pe.type === "bind" && pe.symbol === "m" && pe.value.preview === "2", `live predicate name == 'm' and v == 2: #${pe.idx} ${pe.type} ${pe.symbol} = ${pe.value.preview}`);
    await page.fill("#power-text", "m == 2");
    await page.press("#power-text", "Enter");
    await page.waitForFunction(() => document.querySelector("#toast").textContent.includes("'m == 2' names 'm'"));
    check(true, "a predicate naming something the entry lacks is refused, quoting it: " + await page.textContent("#toast"));

    // Recording controls: stop, start, reload.
    check(await page.$eval("#rec-dot", (d) => d.classList.contains("on")), "recording");
    await page.click("#rec-toggle");
    await page.waitForFunction(() => !document.querySelector("#rec-dot").classList.contains("on"));
    check(true, "■ stops recording");
    await page.click("#rec-toggle");
    await page.waitForFunction(() => document.querySelector("#rec-dot").classList.contains("on"));
    check(true, "● starts it again");
    await page.click("#rec-refresh");
    await page.waitForTimeout(300);

    // The modules browser: shop is loaded, not instrumented; instrument it while the program runs.
    await page.keyboard.press("8");
    await page.waitForSelector("#mod-table tr[data-module='shop']");
    check((await page.textContent("#mod-table tr[data-module='shop']")).includes("not"), "the Browser lists shop, not instrumented");
    await page.click("#mod-table tr[data-module='shop']");
    await page.waitForSelector("#mod-detail tr[data-fn='price']");
    check((await page.textContent("#mod-detail")).includes("Cart.total"), "its functions are listed");
    await page.click("#mod-detail button.instrument");
    await page.waitForFunction(() => !document.querySelector("#mod-report").classList.contains("hidden"));
    check((await page.textContent("#mod-report")).includes("instrumented 2 function(s)"), "Instrument module: " + (await page.textContent("#mod-report")).split("\n")[0]);
    await page.waitForFunction(() => document.querySelector("#mod-table tr[data-module='shop'] td.yes"));
    check(true, "shop is now instrumented");
    await shot("live-browser");
    await page.click("#mod-detail tr[data-fn='price'] button.uninstrument");
    await page.waitForFunction(() => document.querySelector("#mod-detail tr[data-fn='price'] td.no"));
    check(true, "uninstrumenting one function");
    check(errors.length === 0, "no page errors " + errors.join("; "));
    console.log("E2E LIVE PASSED");
  } catch (e) {
    console.error(String(e.stack || e));
    await shot("live-failure").catch(() => {});
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
})();
