"""End-to-end tests of the pit dashboard in headless Chromium (Debian's package, via Playwright)."""
