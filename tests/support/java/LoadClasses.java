// Loads (without initialising) each class named on the command line from the classpath.
// Run as a single source file: java -cp JARS LoadClasses.java CLASS...
public class LoadClasses {
    public static void main(String[] args) throws Exception {
        for (String name : args) {
            Class.forName(name, false, ClassLoader.getSystemClassLoader());
        }
    }
}
