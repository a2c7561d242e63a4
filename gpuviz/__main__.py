from gpuviz.app import main

raise SystemExit(main())
