
BYJ`MJAMæI€Ë–ÍË1ÒöLº@ËD:EuÌðG*¿xQ’Ó,LòEÉÈyO¨ÄõÆCPÃ
DrEšÑêÎPÕÈ²NJD×MõO-LÏÈÑ%C‹Í`Q"ÓRÎèÍ—ÒÂP|FÇM®Ñ