from search_engine.cli.main import main

main()
