"""``python -m controller.contract``: write the page's contract (controller/web/contract.json) from this package."""

from __future__ import annotations

from controller.contract.page import PAGE_CONTRACT, write_page_contract

if __name__ == "__main__":
    print(f"{PAGE_CONTRACT}: {'written' if write_page_contract() else 'up to date'}")
