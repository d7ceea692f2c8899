from search_engine.cli.console import main

main()
