from services.extractor.main import main

main()
