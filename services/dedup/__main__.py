from services.dedup.main import main

main()
