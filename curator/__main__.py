from curator.cli import main

main()
