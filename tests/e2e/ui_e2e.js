// Drives squall's web UI in headless Chromium: node ui_e2e.js URL SCREENSHOT_DIR
// Prints one line per check; exits 1 on the first failure.
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { chromium } = require("playwright-core");

const [url, shots] = process.argv.slice(2);
if (!url || !shots) {
  console.error("usage: node ui_e2e.js URL SCREENSHOT_DIR");
  process.exit(2);
}
fs.mkdirSync(shots, { recursive: true });

function check(cond, what) {
  if (!cond) throw new Error("FAILED: " + what);
  console.log("ok: " + what);
}

(async () => {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "squall-e2e-"));
  // A fresh profile directory (Playwright passes it as --user-data-dir).
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
  const shot = (name) => page.screenshot({ path: path.join(shots, name + ".png") });
  const idx = async () => +(await page.inputValue("#idx-input"));
  try {
    // A request without the token is refused.
    const origin = new URL(url).origin;
    const noToken = await page.request.get(origin + "/api/flows");
    check(noToken.status() === 401, "API without the token answers 401");

    const t0 = Date.now();
    await page.goto(url);
    await page.waitForSelector("body[data-ready='1']", { timeout: 10000 });
    console.log(`first paint in ${Date.now() - t0} ms`);
    check((await page.textContent("#tl-select")).includes("MainThread"), "timelines listed");
    check((await page.textContent("#frame-title")).includes("billing."), "stepper opens on the first recorded frame");
    check(await idx() === 0, "stepper starts at idx 0");
    await shot("stepper-start");

    // Step: next, next, next-over, prev.
    await page.keyboard.press("l");
    await page.waitForFunction(() => document.querySelector("#idx-input").value === "1");
    await page.keyboard.press("l");
    await page.waitForFunction(() => document.querySelector("#idx-input").value === "2");
    check(await idx() === 2, "stepping forward with l");
    await page.keyboard.press("j");
    await page.waitForFunction(() => +document.querySelector("#idx-input").value > 2);
    const over = await idx();
    await page.keyboard.press("h");
    await page.waitForFunction((o) => +document.querySelector("#idx-input").value === o - 1, over);
    check(await idx() === over - 1, `next-over went to ${over}, prev came back to ${over - 1}`);
    // Jump to an idx by typing it.
    await page.fill("#idx-input", "40");
    await page.press("#idx-input", "Enter");
    await page.waitForFunction(() => document.querySelector("#idx-input").value === "40");
    check(await page.locator("#source .hl").count() > 0, "current expression highlighted in the source");
    await shot("stepper-stepped");

    // Exceptions: jump to where the KeyError was raised.
    await page.keyboard.press("4");
    await page.waitForSelector(".exc-item");
    const excText = await page.textContent("#exceptions");
    check(excText.includes("KeyError") && excText.includes("InvoiceError"), "exceptions listed with type and message");
    await shot("exceptions");
    const item = page.locator(".exc-item", { hasText: "KeyError" }).first();
    await item.locator("button.jump-raise").click();
    await page.waitForFunction(() => document.querySelector("#frame-title").textContent.includes("tax_for"));
    check((await page.textContent("#frame-title")).includes("billing.pricing.tax_for"), "jumped into tax_for, where the KeyError was raised");
    check((await page.textContent("#tl-select")).length > 0 && (await page.locator("#tl-select").inputValue()) !== null, "timeline switched to the raising thread");
    await shot("exception-raised");

    // Deep link: the URL holds flow, thread and idx; reloading lands on the same point.
    const here = await idx();
    check(/#flow=\d+&thread=\d+&idx=\d+/.test(page.url()), "URL holds flow, thread and idx");
    await page.reload();
    await page.waitForSelector("body[data-ready='1']");
    check(await idx() === here, "deep link reopens the same idx");

    // Inspect a value: the invoice in process_invoice's locals (go up the stack).
    await page.locator("#stack li", { hasText: "process_invoice" }).first().click();
    await page.waitForFunction(() => document.querySelector("#frame-title").textContent.includes("process_invoice"));
    await page.locator("#frame-info .kv", { hasText: "invoice" }).locator(".val").first().click();
    await page.waitForSelector("#inspector:not(.hidden)");
    await page.waitForFunction(() => document.querySelector("#insp-repr").textContent.length > 0);
    const repr = await page.textContent("#insp-repr");
    check(repr.includes("Invoice"), "value inspector shows the invoice: " + repr.slice(0, 80));
    const tog = page.locator("#insp-tree .tog", { hasText: "▸" }).first();
    if (await tog.count()) {
      await tog.click();
      await page.waitForSelector("#insp-tree .kids:not(.hidden) .row");
      check(true, "expanded a nested value");
    }
    await shot("value-inspector");
    await page.keyboard.press("Escape");

    // Call tree and functions.
    await page.keyboard.press("2");
    await page.waitForSelector("#tree .tree-node");
    await page.locator("#tree .tog", { hasText: "▸" }).first().click();
    await page.waitForSelector("#tree .kids:not(.hidden) .tree-node");
    check((await page.textContent("#tree")).includes("process_invoice"), "call tree expands a thread's calls");
    await shot("call-tree");
    await page.keyboard.press("3");
    await page.waitForSelector("#fn-table tr.click");
    await page.locator("#fn-table tr.click", { hasText: "tier_discount" }).first().click();
    await page.waitForSelector("#fn-calls table tr.click");
    check((await page.textContent("#fn-calls")).includes("calls"), "functions tool lists a function's calls");
    await shot("functions");

    // Search by function name.
    await page.keyboard.press("5");
    await page.fill("#search-text", "validate");
    await page.press("#search-text", "Enter");
    await page.waitForFunction(() => document.querySelector("#search-status").textContent.includes("done"));
    check(await page.locator("#search-results tr").count() > 0, "search finds calls of validate");

    // The multi-thread timeline: both threads' entries in recording order; click into a worker's.
    await page.keyboard.press("Escape"); // leave the search box
    await page.keyboard.press("7");
    await page.waitForSelector("#mt-table tr.click");
    const legend = await page.textContent("#mt-legend");
    check(legend.includes("MainThread") && legend.includes("invoice-worker"), "multi-thread timeline lists both threads: " + legend);
    check(await page.locator("#mt-table tr.cur").count() === 1, "it opens on the stepper's current entry");
    await page.check("#mt-fns");
    await page.waitForFunction(() => [...document.querySelectorAll("#mt-table td:nth-child(4)")].every((td) => !/^(expr|bind)/.test(td.textContent)));
    check(true, "only functions: calls and returns");
    await page.click("#mt-first");
    await page.waitForFunction(() => document.querySelector("#mt-status").textContent.startsWith("1–"));
    let worker = page.locator("#mt-table tr.click", { has: page.locator("td.th", { hasText: "invoice-worker" }) });
    for (let i = 0; i < 20 && await worker.count() === 0 && !(await page.isDisabled("#mt-next")); i++) {
      const before = await page.textContent("#mt-status");
      await page.click("#mt-next");
      await page.waitForFunction((b) => document.querySelector("#mt-status").textContent !== b, before);
    }
    check(await worker.count() > 0, "the worker thread's calls are in the merged order");
    const threadsSeen = await page.$$eval("#mt-table td.th", (tds) => [...new Set(tds.map((td) => td.textContent))]);
    check(await page.locator("#mt-table tr.switch").count() > 0, "thread switches marked: " + threadsSeen.join(", "));
    const row = worker.first();
    await row.evaluate((e) => e.scrollIntoView({ block: "center" }));
    await shot("threads");
    const wantIdx = +(await row.getAttribute("data-idx"));
    await row.click();
    await page.waitForFunction((w) => document.querySelector("#tab-stepper").classList.contains("active") && +document.querySelector("#idx-input").value === w, wantIdx);
    const tlText = await page.$eval("#tl-select", (s) => s.options[s.selectedIndex].textContent);
    check(tlText.includes("invoice-worker") && await idx() === wantIdx, `clicked into the worker's #${wantIdx} in the stepper`);

    // Help overlay and light theme.
    await page.keyboard.press("1");
    await page.keyboard.press("?");
    await page.waitForSelector("#help:not(.hidden)");
    await shot("help");
    await page.keyboard.press("Escape");
    await page.keyboard.press("t");
    check(await page.evaluate(() => document.documentElement.classList.contains("light")), "light theme");
    await shot("stepper-light");
    check(errors.length === 0, "no page errors " + errors.join("; "));
    console.log("E2E PASSED");
  } catch (e) {
    console.error(String(e.stack || e));
    await shot("failure").catch(() => {});
    process.exitCode = 1;
  } finally {
    await browser.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
})();
