"""PyInstaller's entry script for the bundle (see llm-dyno.spec): the same ``main`` as the console script."""

from llm_dyno.__main__ import main

if __name__ == "__main__":
    main()
