"""The air console in a real browser (Debian's chromium driven by selenium through chromium-driver), as issue 29
judges it: while two `blue` programs connect on the air, the page shows both devices and their link; the packet list
shows their ATT exchange and a packet's decoded fields on click; dragging a device out of range ends the link and both
programs report it. Screenshots go to .build/console-screenshots/ (README's picture is one of them). The sequence
chart of a seed 001 session (`blue snoop chart`) opens in the same browser without an error in its console."""
import os
import shutil
import subprocess
import time

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.actions.wheel_input import ScrollOrigin
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from air_support import Hub, tshark_count, tshark_malformed
from conftest import BLUE
from console_support import console_air

SCREENSHOTS = os.path.join(os.path.dirname(__file__), "..", ".build", "console-screenshots")


@pytest.fixture
def browser():
    chromium = shutil.which("chromium")
    driver_path = shutil.which("chromedriver")
    assert chromium and driver_path, "chromium and chromium-driver are needed (Scripts/setup-interop.sh installs them)"
    options = Options()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,900",
                     "--no-first-run", "--disable-extensions"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(30)
    os.makedirs(SCREENSHOTS, exist_ok=True)
    try:
        yield driver
    finally:
        driver.quit()


def severe_console_messages(driver):
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def wait(driver, condition, what, timeout=30):
    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.2).until(lambda d: condition(d))
    except Exception as error:
        driver.save_screenshot(os.path.join(SCREENSHOTS, "failure.png"))
        raise AssertionError(f"the console did not show {what} within {timeout} s "
                             f"(page: {driver.find_element(By.TAG_NAME, 'body').text[:1500]!r})") from error


def test_console_shows_the_air_and_a_drag_ends_the_link(tmp_path, browser):
    with console_air(tmp_path) as air:
        browser.get(air.url)
        wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#map g.device")) == 2, "two devices")
        wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#map .link"), "the link")
        wait(browser, lambda d: d.find_element(By.ID, "status").text.strip().startswith("live"), "the live status")
        names = browser.find_element(By.ID, "map").text
        assert "blue-serve" in names and "blue-subscribe" in names, names
        # The ATT exchange in the packet list: the subscriber's notifications, at both ends.
        att_rows = wait(browser, lambda d: [row for row in d.find_elements(By.CSS_SELECTOR, "#packets .packet")
                                            if "att" in (row.get_attribute("data-layers") or "").split()
                                            and "Notification" in row.text], "an ATT notification in the packet list")
        att_rows[-1].click()
        wait(browser, lambda d: "Handle Value Notification" in d.find_element(By.ID, "details-body").text, "the packet's fields")
        browser.save_screenshot(os.path.join(SCREENSHOTS, "console-link.png"))

        # Out of range: zoom the map out until it spans well over the radio's range, then drag dev2 to the far right.
        svg = browser.find_element(By.ID, "map")
        for _ in range(60):
            span = browser.execute_script(
                "const s = arguments[0], m = s.getScreenCTM().inverse(), r = s.getBoundingClientRect();"
                "const p = (x) => { const q = s.createSVGPoint(); q.x = x; q.y = r.top + r.height / 2; return q.matrixTransform(m).x; };"
                "return p(r.right) - p(r.left);", svg)
            if span > 4000:
                break
            ActionChains(browser).scroll_from_origin(ScrollOrigin.from_element(svg), 0, 400).perform()
            time.sleep(0.05)
        assert span > 4000, f"the map would not zoom out past {span:.0f} m"
        device = browser.find_element(By.CSS_SELECTOR, '#map g.device[data-device="2"]')
        target_x = svg.rect["x"] + svg.rect["width"] - 260
        offset = target_x - (device.rect["x"] + device.rect["width"] / 2)
        ActionChains(browser).click_and_hold(device).move_by_offset(offset / 4, 0).move_by_offset(offset / 4, 0) \
            .move_by_offset(offset / 4, 0).move_by_offset(offset / 4, 0).release().perform()
        wait(browser, lambda d: "move: dev2 to" in d.find_element(By.ID, "toast").text, "the move's answer")
        assert "fault: move: dev2 to" in air.hub.stdout(), "the hub reports the drag as blue fault's move"

        # Both programs report the lost link (supervision timeout), and the page drops it.
        air.wait_for(lambda: "disconnected" in air.output("server"), "the server reported the lost link")
        air.wait_for(lambda: "disconnected" in air.output("subscriber"), "the subscriber reported the lost link")
        wait(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, "#map .link"), "the link gone")
        browser.save_screenshot(os.path.join(SCREENSHOTS, "console-out-of-range.png"))
        assert severe_console_messages(browser) == []


def test_sequence_chart_of_seed_001_opens_without_errors(tmp_path, browser):
    seeds = os.path.dirname(os.path.abspath(BLUE))
    peripheral, central = os.path.join(seeds, "Seed001Peripheral"), os.path.join(seeds, "Seed001Central")
    assert os.path.exists(peripheral) and os.path.exists(central), "build seed 001 first (swift build)"
    hub = Hub(tmp_path).start()
    env = dict(os.environ, OCB_AIR_SOCKET=hub.socket)
    try:
        server = subprocess.Popen([peripheral], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            # The peripheral is dev1: it has joined before the central starts (under load it could join second).
            deadline = time.monotonic() + 30
            while "joined: dev1" not in hub.stdout() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert "joined: dev1" in hub.stdout(), f"seed 001's peripheral did not join: {hub.stdout()}"
            result = subprocess.run([central], env=env, capture_output=True, text=True, timeout=60)
            assert result.returncode == 0, result.stderr
        finally:
            server.terminate()
            server.wait(timeout=10)
    finally:
        hub.interrupt()
        hub.kill()
    captures = hub.snoop_files()
    assert len(captures) == 2, captures
    chart = os.path.join(tmp_path, "seed001.html")
    subprocess.run([BLUE, "snoop", "chart", *captures, "--output", chart], check=True, capture_output=True, timeout=60)
    browser.get("file://" + chart)
    lanes = browser.find_elements(By.CSS_SELECTOR, "svg .lanetitle")
    assert sorted(lane.text.split("-", 1)[1] for lane in lanes) == ["Seed001Central", "Seed001Peripheral"], [lane.text for lane in lanes]
    labels = [element.text for element in browser.find_elements(By.CSS_SELECTOR, "svg .entry .label")]
    assert any("connection:" in label for label in labels)
    assert any("Write Request" in label for label in labels)
    assert any("Handle Value Notification" in label for label in labels)
    browser.save_screenshot(os.path.join(SCREENSHOTS, "seed001-chart.png"))
    assert severe_console_messages(browser) == []


def downloaded(directory, suffix, timeout=20):
    """The file with `suffix` the browser finished downloading into `directory`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        names = [name for name in os.listdir(directory) if name.endswith(suffix)]
        if names and not any(name.endswith(".crdownload") for name in os.listdir(directory)):
            return os.path.join(directory, names[0])
        time.sleep(0.1)
    raise AssertionError(f"no {suffix} downloaded within {timeout} s: {os.listdir(directory)}")


def test_console_captures_download_and_live_chart(tmp_path, browser):
    """Captures started, stopped and downloaded from the page, read by tshark; the live sequence chart in the page."""
    downloads = os.path.join(str(tmp_path), "downloads")
    os.makedirs(downloads)
    browser.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
    with console_air(tmp_path) as air:
        browser.get(air.url)
        wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#capture-device option")) == 2, "two devices to capture")
        browser.find_element(By.ID, "capture-btsnoop").click()   # dev1, the heart-rate server: its notifications
        browser.find_element(By.ID, "capture-pcap").click()
        wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#captures li.running")) == 2, "two running captures")
        # The list is redrawn every second while a capture runs: read it and click in it by script, by capture id.
        texts = "return [...document.querySelectorAll('#captures li')].map((li) => li.textContent);"
        wait(browser, lambda d: all(" 0 packets" not in text for text in d.execute_script(texts)), "packets captured")
        time.sleep(2)  # a few notifications (one a second)
        for capture in (1, 2):
            browser.execute_script(f"document.querySelector('#captures li[data-id=\"{capture}\"] button[data-action=\"stop\"]').click()")
            wait(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, f'#captures li.running[data-id="{capture}"]'), f"capture {capture} stopped")
        listed = [text.split(" · ")[0] for text in browser.execute_script(texts)]
        assert listed == ["#1 dev1 btsnoop", "#2 air pcap"], browser.execute_script(texts)
        browser.save_screenshot(os.path.join(SCREENSHOTS, "console-captures.png"))
        for capture, suffix in ((1, ".btsnoop"), (2, ".pcap")):
            browser.execute_script(f"document.querySelector('#captures li[data-id=\"{capture}\"] button[data-action=\"download\"]').click()")
            downloaded(downloads, suffix)
        snoop = downloaded(downloads, ".btsnoop")
        assert os.path.basename(snoop) == "dev1-blue-serve-capture1.btsnoop"
        assert open(snoop, "rb").read(8) == b"btsnoop\0"
        assert tshark_malformed(snoop) == "", snoop
        assert tshark_count(snoop, "btatt.opcode == 0x1b") >= 2, "the server's Handle Value Notifications"
        pcap = downloaded(downloads, ".pcap")
        assert tshark_malformed(pcap) == "", pcap
        assert tshark_count(pcap, "btle.data_header") > 10, "the link's data PDUs on the air"

        # The live sequence chart, in the page: a lane per program, the notifications between them.
        browser.find_element(By.ID, "chart-open").click()
        wait(browser, lambda d: d.find_element(By.ID, "chart-overlay").is_displayed(), "the chart")
        browser.switch_to.frame(browser.find_element(By.ID, "chart-frame"))
        lanes = [lane.text for lane in browser.find_elements(By.CSS_SELECTOR, "svg .lanetitle")]
        assert lanes[:2] == ["dev1 blue-serve", "dev2 blue-subscribe"], lanes
        labels = [element.text for element in browser.find_elements(By.CSS_SELECTOR, "svg .entry .label")]
        assert any("Handle Value Notification" in label for label in labels), labels[:20]
        browser.switch_to.default_content()
        browser.save_screenshot(os.path.join(SCREENSHOTS, "console-chart.png"))
        browser.find_element(By.ID, "chart-close").click()
        assert not browser.find_element(By.ID, "chart-overlay").is_displayed()
        assert severe_console_messages(browser) == []
