from gitkb.cli import main

main()
