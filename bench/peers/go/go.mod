module mqs/peers/go

go 1.18
