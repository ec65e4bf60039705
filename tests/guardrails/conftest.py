"""Shared setup for the policy pack, lint and admission tests."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
