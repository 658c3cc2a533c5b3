from services.importance.main import main

main()
