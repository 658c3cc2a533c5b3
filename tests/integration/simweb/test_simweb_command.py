"""``python -m libs.simweb``: prints its address, serves, writes its logs, stops on SIGTERM."""

from __future__ import annotations

import asyncio
import re
import signal
import sys
from pathlib import Path

import aiohttp

from libs.simweb import read_log_file

ROOT = Path(__file__).resolve().parents[3]


async def test_command_serves_until_sigterm(tmp_path: Path) -> None:
    log_file, seeds_file = tmp_path / "requests.jsonl", tmp_path / "seeds.txt"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "libs.simweb", "--port", "0", "--seed", "7", "--hosts", "12", "--pages", "150",
        "--speed", "0", "--log-file", str(log_file), "--seeds-file", str(seeds_file),
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdout is not None
    try:
        line = (await asyncio.wait_for(process.stdout.readline(), timeout=20)).decode()
        match = re.search(r"serving at (http://127\.0\.0\.1:\d+)", line)
        assert match, line
        seeds = seeds_file.read_text().split()
        assert len(seeds) == 12 and all(url.startswith("http://") and url.endswith(".test/") for url in seeds)
        proxy = match.group(1)
        async with aiohttp.ClientSession() as session, session.get(seeds[0], proxy=proxy) as response:
            assert response.status == 200
            assert "<!doctype html>" in await response.text()
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), timeout=20) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    records = read_log_file(log_file)
    assert [(r.path, r.status) for r in records] == [("/", 200)]
