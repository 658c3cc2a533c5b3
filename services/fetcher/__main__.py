from services.fetcher.main import main

main()
