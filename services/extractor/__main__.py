from services.extractor.main import main

if __name__ == "__main__":  # extraction workers are spawned: they import this module, and must not run it
    main()
