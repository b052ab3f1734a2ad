import { chromium, type Browser } from 'playwright-core';
import { ensureInstalled, type DebianPackage } from '../../src/dev/packages.js';

// Headless Chromium from Debian's package, driven by playwright-core: never a browser download.
// Missing, it is installed with apt-get when the test runs as root; otherwise the test fails with
// the exact command to run.

export const CHROMIUM: DebianPackage = { package: 'chromium', binaries: ['/usr/bin/chromium'], what: "Debian's Chromium (the page's browser test drives it)" };

// Without the background-networking flags Chromium keeps trying hosts this machine cannot reach.
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** A browser with a fresh, empty profile: playwright makes its --user-data-dir and removes it on close. */
export const launchChromium = async (say: (line: string) => void): Promise<Browser> =>
  chromium.launch({ executablePath: ensureInstalled(CHROMIUM, say), headless: true, args: FLAGS });
