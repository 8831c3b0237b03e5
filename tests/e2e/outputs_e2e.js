// Drives the Outputs tab in headless Chromium: node outputs_e2e.js URL SCREENSHOT_DIR
// The recording is tests/output_programs/threads_out.py's: three worker threads print one line
// each in `work`, then the main thread (which recorded nothing) prints "main done".
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { chromium } = require("playwright-core");

const [url, shots] = process.argv.slice(2);
if (!url || !shots) {
  console.error("usage: node outputs_e2e.js URL SCREENSHOT_DIR");
  process.exit(2);
}
fs.mkdirSync(shots, { recursive: true });

function check(cond, what) {
  if (!cond) throw new Error("FAILED: " + what);
  console.log("ok: " + what);
}

(async () => {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "squall-e2e-"));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    viewport: { width: 1400, height: 860 },
  });
  const page = browser.pages()[0] || await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  try {
    await page.goto(url);
    await page.waitForSelector("body[data-ready='1']", { timeout: 10000 });

    // The tab, by its button and by its key.
    await page.click('#tabs button[data-tab="outputs"]');
    await page.waitForSelector(".out-chunk");
    const rows = await page.locator(".out-chunk").allTextContents();
    check(rows.length === 4, `four chunks listed (${rows.length})`);
    check(rows[0].includes("worker 0 total 0") && rows[0].includes("w0") && rows[0].includes("stdout"),
      "the first chunk is w0's line, with its stream and thread");
    check(rows[3].includes("main done") && rows[3].includes("no entry yet"),
      "a chunk of a thread that recorded nothing says it has no entry");
    check((await page.textContent("#out-status")).includes("4 chunk(s)"), "the status counts the chunks");
    await page.screenshot({ path: path.join(shots, "outputs.png") });

    // Filters: text and stream.
    await page.fill("#out-filter", "total 10");
    await page.waitForFunction(() => document.querySelectorAll(".out-chunk").length === 1);
    check((await page.textContent(".out-chunk")).includes("worker 1 total 10"), "the text filter keeps w1's line");
    await page.fill("#out-filter", "");
    await page.waitForFunction(() => document.querySelectorAll(".out-chunk").length === 4);
    await page.selectOption("#out-stream", "stderr");
    await page.waitForSelector("#outputs-list p.muted");
    check((await page.textContent("#outputs-list")).includes("No output matches"), "no stderr output: said so");
    await page.selectOption("#out-stream", "");
    await page.waitForFunction(() => document.querySelectorAll(".out-chunk").length === 4);

    // Clicking a chunk opens the entry that wrote it, in its thread.
    const w2 = page.locator(".out-chunk", { hasText: "worker 2 total 20" });
    const where = await w2.locator(".out-where").textContent();
    const idx = +/idx (\d+)/.exec(where)[1];
    await w2.click();
    await page.waitForFunction(() => document.querySelector("#tab-stepper").classList.contains("active"));
    await page.waitForFunction((i) => document.querySelector("#idx-input").value === String(i), idx);
    check(await page.inputValue("#idx-input") === String(idx), `the stepper is at the chunk's idx ${idx}`);
    const tl = await page.locator("#tl-select").inputValue();
    const tlText = await page.locator(`#tl-select option[value="${tl}"]`).textContent();
    check(tlText.includes("w2"), `the stepper switched to w2's timeline (${tlText})`);
    check((await page.textContent("#frame-title")).includes("work"), "the stepper shows the frame of work()");

    // Key 0 opens the tab again; the chunk without an entry is not a link.
    await page.keyboard.press("0");
    await page.waitForSelector(".out-chunk.no-entry");
    await page.locator(".out-chunk.no-entry").click();
    check(await page.locator("#tab-outputs").evaluate((e) => e.classList.contains("active")), "a chunk without an entry stays on the tab");

    check(errors.length === 0, "no JavaScript errors: " + errors.join("; "));
    console.log("E2E PASSED");
  } finally {
    await browser.close();
  }
})().catch((e) => {
  console.error(e.message || e);
  process.exit(1);
});
