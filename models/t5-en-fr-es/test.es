La puerta no estaba en la botella pero los elefantes corren sin este elefante gris.
Cinco reyes han pintado conejos pero ellos han jugado debajo de la cama.
Un pequeño padre ha dicho que vuestro viejo panadero escribirá los buenos libros.
Vuestros búhos comerán mi pastel fresco mañana.
Nuestras escuelas y la iglesia no son pequeñas.
El vecino que el estudiante llama a menudo baila delante de un niño.
Los caballos blancos están cerca de este árbol.
Un rey pinta estos conejos.
Vuestros elefantes amarillos han esperado a estos bonitos profesores.
Las reinas conocerán al pequeño niño sobre esta silla pero ellos cocinan el pastel extraño.
El médico no ha mirado a su rey pero los reyes no esperan que vuestro panadero está tranquilo.
Vosotros habéis caminado detrás de un libro.
Nosotros no buscaremos su caballo inteligente que ellos han encontrado cerca del jardín.
¡Cuatro hombres pintan un buen sombrero negro que él no mira!
¡Un estudiante rico busca un viejo cuadro limpio que vosotros lleváis!
Nosotros hemos limpiado la buena escuela extraña.
Él verá a sus bonitos amigos tranquilos.
Mis grandes médicos comprarán el sombrero que los pájaros no atrapan detrás de un caballo.
Los malos padres que su chica ha llamado eran extraños.
Las botellas y su pelota eran hermosas.
Su hermano ha vendido la manzana redonda al gran granjero.
Yo reiré.
Vuestro médico y nuestros chicos muestran un periódico a un granjero.
Nosotros hemos jugado.
Los jóvenes pájaros estaban sin un amigo valiente ayer y la caja y sus chicas no están sin esta mujer feliz
Las chicas han limpiado su habitación.
Tres panaderos ruidosos que vosotros veréis han amado jardines.
El hombre no ha tomado una caja limpia y su buen granjero jugará mañana.
La madre espera que los patos amarillos están detrás de sus puertas.
La pequeña reina ha bailado sobre la buena cama.
Él no estará con el caballo mañana
La vaca busca una zanahoria redonda.
Su granjero ha bailado debajo de la mesa.
Mis malos amigos no han mirado a médicos felices.
El hermano famoso lava la naranja con los gatos valientes
Nuestra vieja madre inteligente ayudará el hermoso pato.
Este amigo mira su carta que las chicas toman.
Ella ha esperado a estas reinas extrañas y el amigo ha llamado al amigo triste.
Vuestras reinas y nuestra mujer nunca han oído al médico que las chicas nunca llaman detrás de la pelota.
Los granjeros han tomado las hermosas manzanas frescas
Él dice que este bonito amigo a menudo ha visitado el árbol pero vosotros miráis ratones.
Este huevo que sus ratones han encontrado es pequeño.
El bonito panadero hambriento llora con un conejo
Sus malos padres valientes eran ricos pero yo muestro el cuadro a un vecino extraño.
Nosotros hemos dado un sándwich a un panadero.
El granjero inteligente abre la ventana limpia sobre su mesa.
Ella mira un bolso.
Nosotros esperamos a las madres sobre el coche blanco.
Él ha mostrado nuestros huevos a vuestra buena madre.
Sus búhos y sus ratones no estaban tranquilos
Su pequeño estudiante que no ha mirado al panadero nunca canta debajo de una mesa ahora
Vosotros decís que ella no ha cocinado su huevo.
Su madre que buscará a nuestra chica a menudo caminará sin el profesor
Los niños estarán sin los pájaros blancos.
El búho y el gato buscan este caballo.
Su mujer y el rey han cocinado un mal queso verde pero la chica come el sándwich ahora.
El pastel y nuestra pera no son dulces ahora.
Vuestro gran profesor triste ha seguido sus elefantes cerca de su reina.
Los malos padres comen dos quesos y vuestro búho y los hermanos han visto los grandes sándwiches ayer
Nosotros a menudo hemos llevado una ventana.
Ellos estarán con el búho.
Esta actriz ha llamado el ratón.
Sus hombres tristes mostrarán la mala manzana a la chica.
¡Los huevos y su pastel son extraños y los granjeros y vuestros hermanos no han traído la pequeña pera a su buena actriz!
Mi conejo no era grande.
Los chicos no pensarán que vosotros habéis esperado un ratón triste y los perros están sobre mi mesa ahora
Yo visito vuestro parque ahora y su reina ha dicho que la reina hambrienta es rica.
¡Su granjero y el niño nunca abren un bolso azul que nosotros no hemos mirado!
Tres reinas no han encontrado los viejos sándwiches amarillos.
Los panaderos y sus cajas estaban delante de un bolso.
Yo siempre trabajo con su caballo y el caballo y las vacas no están hambrientos.
Ella a menudo muestra esta carta a su madre pero yo a menudo traigo dos coches pesados a las reinas famosas.
El búho nunca camina debajo de la cama.
Ellos no oirán a sus nuevos chicos.
Su gato espera un pájaro que el búho ha oído.
Una chica escribirá los nuevos libros limpios.
¡El hombre cocina su tomate!
¡Ella trabaja en estas habitaciones!
¡Yo estoy sobre esta caja!
El búho corre debajo de las mesas.
Un ratón no mirará la cama extraña
El búho extraño ha esperado un gran pato triste.
Los jóvenes vecinos ruidosos no han pintado tres habitaciones delante de hermosos parques y los caballos tristes no comerán el buen queso.
La reina tranquila ha trabajado debajo del paraguas.
El chico no ha visitado sus nuevos parques blancos y cinco chicas no llaman el joven caballo tranquilo.
Mi profesor feliz no corre detrás del nuevo vecino.
Vuestro vecino extraño que trabaja a menudo jugará sobre la vieja caja.
Las chicas saben que ella es rica.
El amigo y sus estudiantes cocinan zanahorias pero vuestro hermano y su chico olvidan al buen granjero ahora.
El amigo ha esperado los viejos ratones negros sin el búho ayer.
El estudiante baila con el chico pero los malos profesores saben que vuestra silla y los granjeros estaban sin el caballo.
El pequeño médico dará un tomate a sus vecinos mañana pero mi panadero conoce las escuelas ahora.
El bonito padre extraño no encontrará el pastel debajo de vuestra cama.
Nosotros no hemos dormido en sus calles.
El bolso gris que el amigo llevará está cerca de la cocina.
La mujer y su rey han llorado sin la chica
Él nadará detrás de estos amigos mañana.
Ellos no están detrás de las cajas.
Los hermanos felices escribirán los libros mañana pero la madre nunca toma nuestro queso ahora.
Las mujeres escuchan los elefantes pero mis estudiantes dicen que esta bonita actriz inteligente nunca encuentra dos mesas famosas sin las hermanas.
Mis jóvenes chicos han dicho que una hermana no estaba delante de un niño.
Los amigos no ayudan a los estudiantes.
El profesor tranquilo ha dado estas bonitas zanahorias dulces a madres.
Los viejos vecinos ricos siempre nadan en una calle pero ella ha corrido debajo de las camas.
Los nuevos profesores que yo miro a menudo toman el bonito pastel sin su búho.
Un vecino no espera que esta actriz está hambrienta.
Ellos a menudo han llamado al buen panadero que no canta.
Sus chicos que han buscado mi mesa a menudo han llamado bonitos caballos en la habitación.
Su bonito hombre es extraño pero su hermosa zanahoria es bonita.
Nuestra madre siempre seguirá el ratón valiente que la hermana nunca ha lavado.
Los conejos no dormirán con este profesor pero yo diré que nosotros no estaremos detrás del sombrero.
Los amigos no trabajarán.
La reina y sus amigos no conocerán tres parques mañana.
¡Ella no ha bailado sin sus profesores!
Vuestras vacas y los pájaros no eran ruidosos.
Su cuadro y nuestro sombrero son rojos
Nosotros hemos llamado a hermosos profesores.
El vecino valiente ha reído pero el joven amigo ve el conejo.
Ellos abren tres grandes botellas ahora
Nuestro niño nunca ha pintado el hotel blanco ayer.
Ella vende un sándwich al joven vecino.
Ella muestra conejos valientes que su rey no ha oído a los pequeños niños.
Vosotros siempre habéis comprado malas botellas negras.
El coche pesado está limpio.
Ellos no están debajo de un paraguas.
Vosotros no estabais delante del bolso.
Un panadero ha ayudado a este rey.
Él ríe.
Su vecino y el profesor pintan el árbol extraño que vuestro profesor no ha amado.
El estudiante no ha atrapado el gato ayer.
El joven médico ama el búho
El profesor ha sabido que su conejo será hermoso.
Cuatro hermosos profesores no han llamado un viejo caballo.
Ellos cantan cerca de un médico.
¡Una madre compra este libro ahora!
Las hermanas dan grandes coches amarillos a médicos.
Los reyes felices han llamado a la reina ayer.
Su zanahoria que la hermana lleva es redonda.
La hermosa manzana no será pequeña pero sus manzanas dulces son pequeñas ahora.
La ciudad y la cocina están tranquilas.
Ellos no juegan ahora.
Ella piensa que sus vacas y el gato están en su jardín.
Sus cajas y nuestra mesa serán famosas.
El joven granjero ha pintado dos perros que han atrapado una ventana.
La madre a menudo cocina dos manzanas.
Vuestro perro y los patos no han oído elefantes que buscan nuestras llaves ayer
El buen vecino canta sin el ratón.
Mis habitaciones que él visitará estaban limpias.
Las hermanas no han escrito cinco malas cartas.
Su médico visita cinco escuelas extrañas debajo del pequeño paraguas.
Ellos olvidan sus buenas cajas.
Nuestro elefante hambriento está delante de la habitación.
Los bonitos ratones grises corren detrás de una cocina.
Estos granjeros famosos siempre cocinarán este queso
El vecino compra la mesa.
Yo estaba debajo del árbol.
Este chico pinta estos perros ahora.
Sus niños y el médico han esperado que ella trabaja con el elefante
Las hermosas hermanas tranquilas han mostrado las cartas a reinas.
Este hombre cansado estaba debajo de la cama.
Este hombre no ha amado la pequeña caja limpia que las mujeres han comprado.
Los niños nunca lloran y vosotros dais las llaves a vuestros padres ruidosos.
El rey que ha seguido al niño ha caminado delante de los periódicos ayer.
Nuestras hermosas mujeres famosas olvidan a vuestro mal vecino que su pájaro oirá.
Vuestro pato gris no ha comido las manzanas.
Mi granjero llorará detrás de los ratones inteligentes.
Él lavará las vacas.
El rey comprará una gran zanahoria mañana y el hombre ruidoso ha dado dos cuadros al profesor.
El conejo a menudo nadará sin el conejo blanco.
El gran elefante que ellos no han pintado camina detrás del cuadro.
Él olvidará al rey.
¡La hermosa reina tranquila nunca bailará delante de la calle!
¡La cama que ellos no verán no estaba con el caballo ayer!
Esta actriz oye su perro gris.
El vecino da nuestra pelota a un hermano ahora y vosotros dais esta manzana a su vecino ahora.
La actriz seguirá a un niño feliz pero ella siempre ha buscado sus viejos conejos negros cerca del búho.
Su elefante y el hermano han caminado ayer.
Un hermoso amigo extraño no ha reído detrás de búhos pero vosotros no cocináis sus huevos redondos.
Una silla que las hermanas nunca atrapan era hermosa.
El pato era ruidoso.
¡Ella pensará que un amigo está en los coches!
Vuestro profesor extraño ha atrapado esta caja ayer y nosotros siempre caminamos cerca de una chica valiente.
Un pequeño búho no camina ahora.
La mujer no vende pasteles a un niño.
Él sabe que vosotros pintáis el elefante.
El hermano tranquilo ha amado cuatro sándwiches que él ama sin las actrices.
Las nuevas mujeres han vendido cinco bonitos quesos verdes que ellos han llevado a vuestros hermosos panaderos.
Ella ha corrido detrás de una botella.
Ellos serán ricos.
El panadero y su rey escriben el libro gris y mi búho y nuestro médico no están delante de vuestras cartas.
Ella camina sin el elefante
Nosotros hemos vendido los paraguas extraños al padre ayer y él oye a la pequeña chica sobre su cama.
Yo llevo la cama pero nuestros hombres siempre han llamado un conejo.
Ellos han dicho que esta actriz visitará los nuevos jardines famosos.
Mi profesor y las mujeres dicen que el hermano no ha escuchado su caballo.
Su naranja y nuestra zanahoria no son dulces ahora.
La mujer inteligente ha pintado nuestro gran hotel.
Vosotros habéis sabido que los perros están hambrientos.
Vosotros siempre escribís el viejo libro.
Su actriz y el estudiante toman este sándwich que ella no ve.
La madre y el hermano no han mostrado este gran gato extraño a su mujer.
Yo he visto tomates pero ellos nunca buscan una zanahoria extraña
Su carta y nuestro periódico no eran viejos
Ella no lavará cinco zanahorias detrás de gatos.
Yo busco la buena zanahoria roja.
Los perros y su ratón no son grises.
Vosotros abrís un bolso famoso pero vuestra vaca a menudo encuentra sus patos con la hermana valiente.
El padre nada sin el elefante ahora.
Su elefante y su caballo eran jóvenes.
Nuestro niño ha cocinado una bonita zanahoria delante de este jardín ayer.
El hermano y su panadero lloran.
El búho y las reinas siguen el conejo ruidoso y el amigo es perezoso.
Vosotros no escucháis a vuestra mujer que llora.
Él ha enviado estos libros que sus actrices lavarán a la chica
Él ha dado sándwiches verdes a su niño ayer pero las jóvenes mujeres han trabajado sobre los coches.
Los jóvenes hermanos han cantado debajo de las sillas pero él llora.
Ella olvida a un hermano tranquilo.
Él no ha olvidado a las reinas.
Este niño no ha llevado dos pequeñas manzanas.
Tres hermanas enviarán una llave roja a su chica
Los jóvenes estudiantes han traído cinco botellas pesadas al chico y dos amigos estaban cansados.
Ellos mostrarán un tomate que ellos no han tomado a su hombre.
Los reyes han cocinado una manzana con este pato pero yo siempre compraré nuestro pastel.
Nuestros padres y su panadero no han llamado a los niños ruidosos que abren bolsos.
Ella muestra este queso que nosotros comemos a su reina valiente.
Una mesa estará rota.
El hermoso hombre vende el pájaro a un hermano
Vosotros corréis y nosotros estamos cerca del viejo pájaro
Ella limpia el parque debajo de este árbol sucio.
Vuestros estudiantes y los padres compran el paraguas debajo de paraguas pero la pequeña hermana no ha jugado cerca de vuestra iglesia.
Los hoteles y el hotel eran blancos y la nueva chica ruidosa no espera a estos profesores.
¡Nosotros hemos oído estos búhos!
El estudiante ha limpiado la cocina tranquila.
Vosotros llamáis a reinas inteligentes ahora.
Nosotros traemos la hermosa llave a sus panaderos ahora y estos grandes padres perezosos traen la nueva caja a los vecinos.
Ellos no estaban sin esta mujer rica ayer y ellos están en su nueva iglesia ahora.
La ciudad que sus búhos no han visto no es ruidosa.
El búho cansado que no ha buscado a su niño no ha buscado la naranja.
Su profesor perezoso ha sabido que un gran gato no es extraño.
Mi perro y el gato están con la hermana triste
Nosotros no bailamos sobre nuestro coche.
Esta hermana ha limpiado las sillas y vosotros vendéis coches a la reina perezosa.
Las mujeres felices han llamado los viejos búhos que él ha llamado.
El elefante que camina ha atrapado hermosos gatos hambrientos.
La madre ha pintado los bonitos caballos ruidosos ayer y el chico toma cinco sillas rotas.
Las vacas extrañas no caminarán.
Yo doy una caja a una actriz y sus madres y sus padres no bailarán detrás de la escuela.
Este rey vende la ventana a un granjero.
Los elefantes no han encontrado las sillas famosas.
El hombre y sus chicos conocen la escuela blanca detrás de los profesores hambrientos.
Vosotros amaréis una vaca negra debajo de la silla
Dos nuevos hermanos extraños venderán el coche gris que él ha atrapado al panadero triste.
El bosque y vuestras ciudades eran extraños.
El bonito profesor ruidoso que vuestras hermanas conocen está cerca del pato.
Mis médicos a menudo buscan el pájaro extraño.
Los pájaros eran valientes pero ella baila en los árboles extraños
El pequeño hermano valiente que las madres mirarán lleva el paraguas.
El rey perezoso sabe que ellos no han llamado a mujeres.
El médico no sabe que su reina y su mujer llaman a este chico.
Los médicos han limpiado la hermosa habitación.
Nosotros estamos con madres.
El vecino que él no ha seguido encuentra perros extraños.
El padre y su actriz lavan este mal cuadro detrás de los perros.
Vosotros siempre enviáis cinco hermosos cuadros al vecino pero estos ratones no caminarán.
Vuestro estudiante a menudo abre el libro.
Yo he dado la pera que ella ama a la actriz.
Él no ha dicho que vuestros vecinos y su chico duermen detrás de un gato extraño.
Vosotros no llamaréis estos pájaros.
El padre ayuda gatos.
Los panaderos felices juegan debajo del coche ahora.
El hombre no ayuda un ratón.
Nuestras habitaciones que nosotros amamos serán pequeñas mañana
Nuestro queso y las naranjas son redondos ahora.
El perro extraño es amarillo.
Sus gatos y su chico siguen su gato negro y cinco vacas nadan en una escuela.
El hombre no ha ayudado a amigos extraños.
¡La mujer estaba sin un padre!
Él a menudo vende este búho sucio a un estudiante.
Vosotros habéis buscado a las actrices en sus buenas calles.
El médico ha llevado las naranjas verdes que la reina no encontrará.
Nosotros vendemos los grandes elefantes negros a un rey.
Vosotros estabais debajo del árbol tranquilo
La reina que no jugará no olvidará la mala carta.
Vosotros cocináis un queso rojo que nuestros panaderos no han comprado ahora.
¡El profesor ha esperado que sus conejos y los pájaros serán blancos!
Nosotros no estamos detrás de las llaves azules.
El búho y el elefante son negros.
El ratón y las vacas eran jóvenes pero vosotros pensáis que ella estaba delante de los periódicos.
Yo canto detrás de sombreros.
La pelota pesada que nosotros nunca encontramos no es pesada.
Los tomates amarillos eran viejos.
Su profesor no ha buscado a un hombre cerca de la pelota y los elefantes no verán una zanahoria extraña.
La chica ha reído con este panadero triste pero el nuevo vecino toma la botella delante del gran hermano.
La nueva reina feliz reirá sin las hermanas mañana
Yo no oigo a un rey.
La bonita caja no está detrás de profesores.
Vosotros habéis seguido un caballo pero los hombres han amado a chicas.
Mi niño perezoso nunca ha llamado a los padres.
Un gran búho hambriento que las mujeres han lavado no es valiente.
Él visitará la escuela sucia mañana pero la vieja vaca está en una habitación sucia.
