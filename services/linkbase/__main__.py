from services.linkbase.main import main

main()
