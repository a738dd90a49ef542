from yuexuan.cli import main

raise SystemExit(main())
