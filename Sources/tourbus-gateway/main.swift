import Gateway

GatewayServer.main()
